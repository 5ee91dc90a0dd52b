//! `agentctx status`: where the newest plan of a stored context stands —
//! what the calls table says, and for the rest the readiness rule.

use crate::schedule::{has_tool, known, parse_plan};
use crate::{Error, PlanStatus};
use agent_data::Append;
use agent_plan::{Known, standings};
use agent_store::{CallRow, PgCalls, PgStore, Stored};

/// Where the newest plan of the context at `url` stands: what the calls
/// table says, and for the rest whether they are ready or blocked and why.
///
/// # Errors
///
/// [`Error::Store`] when the context cannot be opened or read,
/// [`Error::NoPlan`] when it holds no plan message and
/// [`Error::BadPlan`] when its newest one is not a plan.
pub fn plan_status(url: &str) -> Result<PlanStatus, Error> {
    let store = PgStore::open(url)?;
    let mut calls = PgCalls::open(url)?;
    let Some((row, line)) = calls.newest_plan()? else {
        return Err(Error::NoPlan {
            name: calls.name().to_owned(),
        });
    };
    let plan = parse_plan(row, &line)?;
    let mut rows: Vec<Option<CallRow>> = vec![None; plan.calls().len()];
    for r in calls.rows(row)? {
        if let Some(slot) = rows.get_mut(r.call) {
            *slot = Some(r);
        }
    }
    let live = calls.live_tools()?;
    // After the calls, as a worker's round reads them (see there).
    let stored = Stored::open_tail(store)?;
    let known: Vec<Known> = rows
        .iter()
        .map(|r| r.as_ref().map_or(Known::Open, known))
        .collect();
    let standings = standings(
        &plan,
        &plan.writes_after(),
        &known,
        stored.context(),
        &|tool| has_tool(&live, tool),
    );
    Ok(PlanStatus {
        row,
        plan,
        standings,
        rows,
    })
}
