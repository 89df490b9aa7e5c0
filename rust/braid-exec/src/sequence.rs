//! Several plugin executions in a row on the calling thread, as a DEL of several network lists
//! makes them: each step's stdin is known before the first one runs, so nothing has to happen
//! between two steps but the next plugin's turn. Each plugin is started while the one before it
//! runs (it then waits, unread, on its stdin: a plugin acts on nothing before its
//! configuration), and gets its stdin the moment the one before has finished.
//!
//! Steps belong to groups (a DEL's network lists): a step that does not exit 0 ends its group,
//! whose later steps are skipped, and the sequence goes on with the next group (libcni's DEL
//! of one list stops at its first failure; braid's teardown goes on with the next attachment).

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::{spawn, spawn_fed, Failure, Limits, Output, Plugin, Within};

/// One execution of a sequence.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    pub path: &'a Path,
    pub env: &'a [(String, String)],
    pub stdin: &'a [u8],
    /// Steps of one group are consecutive; a failed step skips the rest of its group.
    pub group: usize,
}

/// What became of one step.
#[derive(Debug)]
pub enum StepResult {
    /// It ran to its end; `seconds` from its turn (its start, or its first byte of stdin when
    /// it was started ahead) to its exit. A non-zero `output.code` ended its group.
    Exited { output: Output, seconds: f64 },
    /// It ran and failed as [`Failure`] says (its group killed and reaped).
    Failed { failure: Failure, seconds: f64 },
    /// It could not be started (the error of its own turn's attempt).
    NotStarted(io::Error),
    /// An earlier step of its group failed, so it never ran.
    Skipped,
}

impl StepResult {
    fn ended_group(&self) -> bool {
        !matches!(self, Self::Exited { output, .. } if output.code == 0)
    }
}

/// The bounds of every step of a sequence.
#[derive(Debug, Clone, Copy)]
pub struct StepLimits {
    /// Each step's own deadline, counted from its turn; `None`: none.
    pub timeout: Option<Duration>,
    pub exit_grace: Duration,
    pub max_stdout: usize,
}

/// Runs `steps` in order (each child entering what `within` names first, as [`spawn`]) and
/// returns what became of each, in the same order. No plugin outlives the call: one started
/// ahead for a step that is then skipped is killed unread.
pub fn run_sequence(steps: &[Step<'_>], limits: StepLimits, within: Within) -> Vec<StepResult> {
    let mut results = Vec::with_capacity(steps.len());
    let mut ahead: Option<(usize, io::Result<Plugin>)> = None;
    let mut failed_group = None;
    for (index, step) in steps.iter().enumerate() {
        // What was started ahead is this step's; dropped unused, a plugin is killed unread.
        let started_ahead = ahead
            .take()
            .and_then(|(for_index, started)| (for_index == index).then_some(started));
        if failed_group == Some(step.group) {
            results.push(StepResult::Skipped);
            continue;
        }
        let started_ahead = started_ahead.and_then(Result::ok);
        let result = run_step(steps, index, started_ahead, limits, within, &mut ahead);
        if result.ended_group() {
            failed_group = Some(step.group);
        }
        results.push(result);
    }
    results
}

/// Step `index`'s turn: its plugin (started ahead, or now with its stdin), the next step's
/// plugin started meanwhile (into `ahead`), then its output collected.
fn run_step(
    steps: &[Step<'_>],
    index: usize,
    started_ahead: Option<Plugin>,
    limits: StepLimits,
    within: Within,
    ahead: &mut Option<(usize, io::Result<Plugin>)>,
) -> StepResult {
    let step = steps[index];
    let turn = Instant::now();
    // A plugin that could not be started ahead is started again in its turn, which says why.
    let (mut plugin, mut fed) = match started_ahead {
        Some(plugin) => (plugin, 0),
        None => match spawn_fed(step.path, step.env, within, step.stdin) {
            Ok(started) => started,
            Err(err) => return StepResult::NotStarted(err),
        },
    };
    if fed < step.stdin.len() {
        // All of a configuration fits a pipe's buffer: the plugin works while the next one
        // is being started.
        match plugin.feed_now(&step.stdin[fed..]) {
            Ok(taken) => fed += taken,
            Err(err) => {
                plugin.kill();
                return StepResult::Failed {
                    failure: Failure::Io(err),
                    seconds: turn.elapsed().as_secs_f64(),
                };
            }
        }
    }
    if let Some(next) = steps.get(index + 1) {
        *ahead = Some((index + 1, spawn(next.path, next.env, within)));
    }
    let bounds = Limits {
        deadline: limits.timeout.map(|timeout| turn + timeout),
        exit_grace: limits.exit_grace,
        max_stdout: limits.max_stdout,
    };
    let outcome = plugin.communicate(&step.stdin[fed..], bounds);
    let seconds = turn.elapsed().as_secs_f64();
    match outcome {
        Ok(output) => StepResult::Exited { output, seconds },
        Err(failure) => StepResult::Failed { failure, seconds },
    }
}

#[cfg(test)]
#[path = "sequence_tests.rs"]
mod tests;
