//! The cap on the bytes a rewrite may produce (`proxy.max_rewrite_bytes`). A rewrite asks
//! its `Budget` before it builds anything large, with sizes computed by saturating
//! arithmetic, so a rule can never make the proxy allocate more than the cap (plus one
//! bounded piece): going over fails that one exchange, never the process.

pub use crate::config::DEFAULT_MAX_REWRITE_BYTES;

/// A rewrite would have gone over the cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the rewrite would make the body at least {needed} bytes, over proxy.max_rewrite_bytes \
     ({limit}); this exchange failed instead"
)]
pub struct TooLarge {
    pub needed: usize,
    pub limit: usize,
}

/// The size of a body being rewritten, against the cap.
#[derive(Debug, Clone)]
pub struct Budget {
    size: usize,
    limit: usize,
}

impl Budget {
    /// A body of `size` bytes so far (0 for a stream: only what rewrites add counts).
    pub fn new(limit: usize, size: usize) -> Self {
        Budget { size, limit }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Adds `extra` bytes, if the body stays within the cap.
    pub fn grow(&mut self, extra: usize) -> Result<(), TooLarge> {
        let needed = self.size.saturating_add(extra);
        // A body already over the cap that a rewrite does not grow is not failed for it.
        if extra > 0 && needed > self.limit {
            return Err(TooLarge {
                needed,
                limit: self.limit,
            });
        }
        self.size = needed;
        Ok(())
    }

    /// A piece of `old` bytes becomes `new` bytes.
    pub fn replace(&mut self, old: usize, new: usize) -> Result<(), TooLarge> {
        if new >= old {
            self.grow(new - old)
        } else {
            self.size = self.size.saturating_sub(old - new);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_over_the_cap_may_be_rewritten_in_place_not_grown() {
        let mut b = Budget::new(100, 500);
        assert!(b.replace(10, 10).is_ok(), "same size: a tone change");
        assert!(b.replace(10, 4).is_ok(), "shrinks");
        assert!(b.grow(1).is_err(), "grows past the cap");
    }

    #[test]
    fn growth_past_the_cap_is_refused_and_changes_nothing() {
        let mut b = Budget::new(100, 60);
        assert_eq!(b.grow(40), Ok(()));
        assert_eq!(
            b.grow(1),
            Err(TooLarge {
                needed: 101,
                limit: 100
            })
        );
        assert_eq!(b.replace(50, 10), Ok(()));
        assert_eq!(b.grow(40), Ok(()), "shrinking made room");
        assert_eq!(
            b.grow(usize::MAX).unwrap_err().needed,
            usize::MAX,
            "saturates, never wraps"
        );
        assert!(b.replace(0, usize::MAX).is_err());
    }
}
