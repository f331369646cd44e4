//! Tokens and cost of the agent's LLM calls (issue #49): the price table (`pricing`: the
//! shipped default, a config's overrides, their checks), sums of the usage the proxy read
//! from each answer (`tally`: per case, scenario, run, unknown counts kept unknown), what
//! fault rules' retries and fallbacks spent (`faults`), and a run's figures as reports
//! carry them (`report`). Pure: reading a pricing file is the config's.

mod faults;
mod pricing;
mod report;
mod tally;

pub use faults::{RuleSpend, because_of_faults, sum_spends};
pub use pricing::{CURRENCIES, Price, PriceError, Pricing, Table, Unpriced, currency, parse_table};
pub use report::{CaseUsage, Delta, PricingInfo, RunUsage, ScenarioUsage};
pub use tally::{Tally, line, money};
