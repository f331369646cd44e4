//! JUnit XML.

use super::view::Overview;

pub fn render(_overview: &Overview<'_>) -> String {
    String::new()
}
