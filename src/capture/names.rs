//! The fake addresses the namespace's DNS gives out, and the names they stand for: one per
//! name, stable for the namespace's life, from 198.18.0.0/15 (RFC 2544's benchmarking
//! range: never a real destination). A captured connection to one of them is a connection
//! to its name, which the upstream connection then resolves for real, outside.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;

/// The range's first address (198.18.0.0) as a number; the range holds 2^17 addresses.
const BASE: u32 = 0xC612_0000;
const SIZE: u32 = 1 << 17;
/// Names one namespace may have addresses for: a bound on memory against an agent that
/// looks up endless random names.
pub const MAX_NAMES: usize = 65_536;

/// Whether `a` is in 198.18.0.0/15.
pub fn in_range(a: Ipv4Addr) -> bool {
    u32::from(a).wrapping_sub(BASE) < SIZE
}

#[derive(Debug, Default)]
struct Table {
    by_name: HashMap<String, Ipv4Addr>,
    by_address: HashMap<Ipv4Addr, String>,
}

/// One namespace's names and their fake addresses.
#[derive(Debug)]
pub struct Names {
    table: Mutex<Table>,
    capacity: usize,
}

impl Default for Names {
    fn default() -> Self {
        Names::with_capacity(MAX_NAMES)
    }
}

impl Names {
    pub fn with_capacity(capacity: usize) -> Names {
        Names {
            table: Mutex::default(),
            capacity: capacity.min(SIZE as usize - 2),
        }
    }

    /// The address of `name` (lower-case), given out now if it has none; `None` once
    /// [`MAX_NAMES`] names have one.
    pub fn address(&self, name: &str) -> Option<Ipv4Addr> {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = t.by_name.get(name) {
            return Some(*a);
        }
        if t.by_name.len() >= self.capacity {
            return None;
        }
        // 198.18.0.1 onwards: the range's first address is not given out.
        let n = u32::try_from(t.by_name.len()).ok()? + 1;
        let a = Ipv4Addr::from(BASE + n);
        t.by_name.insert(name.to_string(), a);
        t.by_address.insert(a, name.to_string());
        Some(a)
    }

    /// The name a fake address stands for.
    pub fn name(&self, a: Ipv4Addr) -> Option<String> {
        let t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        t.by_address.get(&a).cloned()
    }

    /// How many names have an address.
    pub fn len(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_name
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_is_rfc_2544s() {
        assert!(in_range(Ipv4Addr::new(198, 18, 0, 1)));
        assert!(in_range(Ipv4Addr::new(198, 19, 255, 255)));
        assert!(!in_range(Ipv4Addr::new(198, 20, 0, 0)));
        assert!(!in_range(Ipv4Addr::new(198, 17, 255, 255)));
        assert!(!in_range(Ipv4Addr::new(127, 0, 0, 1)));
    }

    #[test]
    fn each_name_has_one_address_and_back() {
        let n = Names::default();
        let a = n.address("a.example").unwrap();
        let b = n.address("b.example").unwrap();
        assert_eq!(a, Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(b, Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(n.address("a.example"), Some(a));
        assert_eq!(n.name(b).as_deref(), Some("b.example"));
        assert_eq!(n.name(Ipv4Addr::new(198, 18, 0, 9)), None);
        assert_eq!(n.len(), 2);
    }
}
