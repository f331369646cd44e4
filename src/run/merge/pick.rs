//! Each kind's report out of a shard's `Report`, for `pieces::all_of`: `None` for a report
//! of another kind (which `all_of` names as not this run's).

use crate::run::chaos::ChaosReport;
use crate::run::contract::ContractReport;
use crate::run::mutation_report::MutationReport;
use crate::run::replay::ReplayReport;
use crate::run::{CiReport, Report};

pub(super) fn contract(r: Report) -> Option<ContractReport> {
    let Report::Contract(r) = r else { return None };
    Some(r)
}

pub(super) fn chaos(r: Report) -> Option<ChaosReport> {
    let Report::Chaos(r) = r else { return None };
    Some(r)
}

pub(super) fn mutation(r: Report) -> Option<MutationReport> {
    let Report::Mutation(r) = r else { return None };
    Some(r)
}

pub(super) fn replay(r: Report) -> Option<ReplayReport> {
    let Report::Replay(r) = r else { return None };
    Some(r)
}

pub(super) fn ci(r: Report) -> Option<Box<CiReport>> {
    let Report::Ci(r) = r else { return None };
    Some(r)
}
