//! The loop (spec R39, R40): request, run the answer's calls, append what
//! failed, until the model gives a valid final output or the turns run out.

use crate::carry::{newest_loop_plan, owed, owes_the_model, plan_message};
use crate::turn::early::Early;
use crate::turn::error_messages::error_messages;
use crate::turn::gate::Tally;
use crate::turn::guard::Guard;
use crate::turn::judge::Rules;
use crate::turn::{TurnCalls, run_calls};
use crate::{
    CallInstances, Confirm, Error, Gates, Provider, Reply, Request, Result, SYSTEM_TEXT, Tool,
    Tools, answer_schema,
};
use agent_core::Kind;
use agent_core::{json, json::Value};
use agent_data::Append;
use agent_data::{CheckMode, Context, Message, Schema};
use agent_output::{Call, Clock};
use agent_plan::Activities;
use agent_render::{RenderMode, Renderer};

/// How a loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// The model's final output, valid against the output schema (R40).
    Output(Value),
    /// `max_turns` turns passed without one (R40).
    Unfinished {
        /// Turns taken.
        turns: u32,
    },
    /// A turn without a final output ran nothing and failed nothing while
    /// calls wait at approval gates: nothing can change until someone
    /// approves, so the run stops (R39c).
    Waiting {
        /// Turns taken.
        turns: u32,
    },
}

/// How a run ended, and what it leaves at approval gates (R39c): each gate
/// named once, with the tools of the calls it holds or rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunReport {
    /// How the loop ended.
    pub finish: Finish,
    /// The gates holding calls of the carried plan, and those that
    /// rejected calls in this run.
    pub gates: Gates,
}

/// What one turn did, for a progress line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TurnReport {
    /// 1-based turn number.
    pub turn: u32,
    /// Calls whose results were written.
    pub calls_run: usize,
    /// Error messages appended.
    pub errors: usize,
    /// Tokens sent, as the provider counted them; when it does not say,
    /// the o200k count of the system text and the rendered messages.
    pub tokens_sent: u64,
}

/// What a loop is doing, as it does it: for a live progress line. Each
/// turn sends [`Event::Asking`], then [`Event::Calls`] as its calls start
/// and are written, then [`Event::TurnEnded`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event<'a> {
    /// The request of turn `turn` (1-based) is on its way.
    Asking {
        /// The turn.
        turn: u32,
    },
    /// The calls of the turn's answer, counted.
    Calls {
        /// The turn.
        turn: u32,
        /// Activities running now.
        running: usize,
        /// Calls whose result is written, or that failed.
        done: usize,
        /// Calls not yet started.
        waiting: usize,
    },
    /// The turn ended.
    TurnEnded(&'a TurnReport),
    /// Before the first request, the calls of the carried plan that were
    /// still owed were judged (sent only when there were some, R39c).
    Carried {
        /// Calls whose results were written.
        calls_run: usize,
        /// Error messages appended.
        errors: usize,
    },
}

/// A loop's settings: the model, the caller's tools and output schema, and
/// its bounds.
///
/// `#[non_exhaustive]`: build it with [`Loop::new`] and the `with_*`
/// setters (or set its fields), so a new setting is not a breaking change.
///
/// ```
/// use agent_loop::Loop;
/// let settings = Loop::new("gpt-4o").with_max_turns(3).with_parallel(2);
/// assert_eq!((settings.max_turns, settings.parallel, settings.max_tokens), (3, 2, 4096));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Loop {
    /// The model's name.
    pub model: String,
    /// Tools from the caller; they come after the context's (R35).
    pub tools: Vec<Tool>,
    /// The schema the final output must match (any value when `None`).
    pub output_schema: Option<Value>,
    /// Turns before the loop ends unfinished (default 10).
    pub max_turns: u32,
    /// How the context is rendered for the model (default merged, R38).
    pub mode: RenderMode,
    /// The answer's token bound, where the provider needs one (default 4096).
    pub max_tokens: u32,
    /// Calls run from one answer (default 10,000); the rest are refused
    /// with one error (R39b).
    pub max_calls: usize,
    /// Whether a model's call may name an instance the context does not
    /// have yet, starting it (default false: only existing ones, R39b).
    pub new_instances: bool,
    /// Activities of one answer run at once (default 8, at least 1); their
    /// results are written in write order whatever order they finish in.
    pub parallel: usize,
}

impl Loop {
    /// A loop for `model` with the defaults.
    pub fn new(model: impl Into<String>) -> Loop {
        Loop {
            model: model.into(),
            tools: Vec::new(),
            output_schema: None,
            max_turns: 10,
            mode: RenderMode::Merged,
            max_tokens: 4096,
            max_calls: 10_000,
            new_instances: false,
            parallel: 8,
        }
    }

    /// With the caller's tools, after the context's (R35).
    pub fn with_tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools = tools;
        self
    }

    /// With the schema the final output must match.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// With at most `max_turns` turns.
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// With the context rendered in `mode` (R38).
    pub fn with_mode(mut self, mode: RenderMode) -> Self {
        self.mode = mode;
        self
    }

    /// With each answer bounded to `max_tokens` tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// With at most `max_calls` calls run from one answer (R39b).
    pub fn with_max_calls(mut self, max_calls: usize) -> Self {
        self.max_calls = max_calls;
        self
    }

    /// Whether a model's call may start an instance (R39b).
    pub fn with_new_instances(mut self, new_instances: bool) -> Self {
        self.new_instances = new_instances;
        self
    }

    /// With at most `parallel` activities of one answer at once (0 counts
    /// as 1).
    pub fn with_parallel(mut self, parallel: usize) -> Self {
        self.parallel = parallel;
        self
    }

    /// Runs turns against `target` — a context in memory, or a stored one
    /// whose every append is a durable commit — until an output or
    /// `max_turns`. `progress` hears of each turn as it ends. A failed
    /// request (R41) or an unwritable store ends the loop with an error;
    /// what earlier turns appended stays.
    ///
    /// # Errors
    /// As [`Loop::run_observed`].
    pub fn run(
        &self,
        provider: &dyn Provider,
        activities: &Activities,
        target: &mut (impl Append + ?Sized),
        clock: &dyn Clock,
        progress: &mut dyn FnMut(&TurnReport),
    ) -> Result<Finish> {
        self.run_observed(provider, activities, target, clock, &mut |event| {
            if let Event::TurnEnded(report) = event {
                progress(report);
            }
        })
    }

    /// [`Loop::run`], telling `observe` of every [`Event`] as it happens:
    /// what a live progress line shows.
    ///
    /// # Errors
    /// As [`Loop::run_confirmed`].
    pub fn run_observed(
        &self,
        provider: &dyn Provider,
        activities: &Activities,
        target: &mut (impl Append + ?Sized),
        clock: &dyn Clock,
        observe: &mut dyn FnMut(Event<'_>),
    ) -> Result<Finish> {
        self.run_confirmed(provider, activities, target, clock, observe, &mut |_| {
            Confirm::Run
        })
        .map(|report| report.finish)
    }

    /// [`Loop::run_observed`], asking `confirm` about each ready call
    /// before it runs (or, for a latent call, before its `_output` is
    /// written): run it, run an edited call instead, or skip it. Returns
    /// how the loop ended with the approval gates it leaves (R39c).
    ///
    /// A run starts with the newest carried plan (R39c): its calls still
    /// owed that are ready run before the model is asked.
    ///
    /// The answer's leading explicit calls that read nothing a call may
    /// write start while it is still streaming (D77: calls start while streaming): `confirm`
    /// is then asked from inside the stream's reader, so a `confirm` that
    /// waits holds the stream, whose deadline keeps running.
    ///
    /// # Errors
    /// [`Error::OutputSchema`] when the output schema is not a valid JSON Schema;
    /// [`Error::BadTool`] when a tool the context defines is not a tool (R35); the errors of
    /// [`Provider::send`] for a failed request (R41); [`Error::Store`] when `target` refuses or
    /// cannot take an append; [`Error::Record`] when a message the loop builds cannot be
    /// recorded. What earlier turns appended stays.
    pub fn run_confirmed(
        &self,
        provider: &dyn Provider,
        activities: &Activities,
        target: &mut (impl Append + ?Sized),
        clock: &dyn Clock,
        observe: &mut dyn FnMut(Event<'_>),
        confirm: &mut dyn FnMut(&Call) -> Confirm,
    ) -> Result<RunReport> {
        let output_schema = match &self.output_schema {
            Some(schema) => Some(Schema::compile(schema).map_err(Error::OutputSchema)?),
            None => None,
        };
        let mut waiting = Tally::default();
        let mut rejected = Tally::default();
        let explicit = |call: &Call| {
            call.tool()
                .is_some_and(|tool| activities.get(tool).is_some())
        };
        if let Some(carried) = newest_loop_plan(target.context()) {
            let owed = owed(target.context(), &carried, &explicit);
            let calls = carried.calls;
            if !owed.is_empty() {
                let tools = self.tools_of(target.context())?;
                let instances: Vec<_> = target.context().instances().cloned().collect();
                let rules = self.rules(&tools, &instances);
                let given: Vec<(usize, &Value)> = owed.iter().map(|&i| (i, &calls[i])).collect();
                let ran = run_calls(
                    &given,
                    &rules,
                    activities,
                    target,
                    clock,
                    &mut |_, _, _| {},
                    confirm,
                    Early::new(),
                )?;
                waiting = ran.held.clone();
                rejected.extend(&ran.rejected);
                let failures = ran.errors.len();
                let mut messages = error_messages(ran.errors, not_a_list(target.context()))?;
                let still: Vec<usize> = ran
                    .pending
                    .iter()
                    .filter_map(|&p| ran.admitted.get(p).copied())
                    .collect();
                if still != owed {
                    messages.push(plan_message(calls.clone(), &still)?);
                }
                if !messages.is_empty() {
                    target.append_all(&messages)?;
                }
                observe(Event::Carried {
                    calls_run: ran.ran,
                    errors: failures,
                });
            }
        }
        let report = |finish: Finish, waiting: &Tally, rejected: &Tally| RunReport {
            finish,
            gates: Gates {
                waiting: waiting.gates(),
                rejected: rejected.gates(),
            },
        };
        for turn in 1..=self.max_turns {
            let tools = self.tools_of(target.context())?;
            let instances: Vec<_> = target.context().instances().cloned().collect();
            let rules = self.rules(&tools, &instances);
            let schema = answer_schema(
                &tools,
                |name| activities.get(name).is_some(),
                rules.guard.instances(),
                self.output_schema.as_ref(),
            );
            let chat = Renderer::new().render(target.context(), self.mode);
            observe(Event::Asking { turn });
            let request = Request::new(&self.model, SYSTEM_TEXT, &chat, &schema)
                .with_max_tokens(self.max_tokens);
            let mut on_calls = |running, done, waiting| {
                observe(Event::Calls {
                    turn,
                    running,
                    done,
                    waiting,
                })
            };
            // The answer's calls are judged as they arrive; those nothing
            // unseen can change start before it ends (D77: calls start while streaming).
            let (reply, calls) = std::thread::scope(|scope| {
                let mut early = Early::new();
                let mut seen: Vec<Value> = Vec::new();
                let sent = {
                    let context = target.context();
                    provider.send_streaming(&request, &mut |at, call| {
                        seen.push(call.clone());
                        early.offer(scope, at, call, &rules, activities, context, confirm, clock);
                    })
                };
                let whole = match &sent {
                    Ok(Reply {
                        answer: Ok(answer), ..
                    }) => Some(answer),
                    _ => None,
                };
                if whole.is_none() && early.started.is_empty() {
                    return sent.map(|reply| (reply, TurnCalls::default()));
                }
                // A reply that turned out invalid, or a failed request,
                // after calls started: those calls ran, and only they are
                // written.
                let given: Vec<(usize, &Value)> = if let Some(answer) = whole {
                    answer.calls.iter().enumerate().collect()
                } else {
                    let at = early.alone();
                    at.iter().filter_map(|&a| Some((a, seen.get(a)?))).collect()
                };
                let calls = run_calls(
                    &given,
                    &rules,
                    activities,
                    target,
                    clock,
                    &mut on_calls,
                    confirm,
                    early,
                )?;
                match sent {
                    Ok(reply) => Ok((reply, calls)),
                    Err(error) => {
                        let messages = error_messages(calls.errors, not_a_list(target.context()))?;
                        if !messages.is_empty() {
                            target.append_all(&messages)?;
                        }
                        Err(error)
                    }
                }
            })?;
            let mut plan = None;
            let (ran, mut errors, output) = match reply.answer {
                Ok(answer) => {
                    if !calls.admitted.is_empty() {
                        // The answer's plan supersedes the carried one:
                        // what waits is what waits in it.
                        waiting = calls.held.clone();
                        let written = calls
                            .admitted
                            .iter()
                            .filter_map(|&a| answer.calls.get(a).cloned())
                            .collect();
                        plan = Some(plan_message(written, &calls.pending)?);
                    }
                    rejected.extend(&calls.rejected);
                    (calls.ran, calls.errors, answer.output)
                }
                Err(error) => {
                    let mut errors = calls.errors;
                    errors.push((Value::Null, error));
                    (calls.ran, errors, None)
                }
            };
            let mut finished = None;
            if let Some(output) = output {
                match output_violations(output_schema.as_ref(), &output) {
                    None => finished = Some(output),
                    Some(problems) => errors.push((
                        Value::Null,
                        format!("the output does not match the output schema: {problems}"),
                    )),
                }
            }
            let failures = errors.len();
            let mut messages = error_messages(errors, not_a_list(target.context()))?;
            messages.extend(plan);
            if let Some(output) = &finished {
                messages.push(output_message(output)?);
            }
            if !messages.is_empty() {
                target.append_all(&messages)?;
            }
            observe(Event::TurnEnded(&TurnReport {
                turn,
                calls_run: ran,
                errors: failures,
                tokens_sent: match reply.usage.input {
                    0 => counted(&chat),
                    n => n,
                },
            }));
            if let Some(output) = finished {
                return Ok(report(Finish::Output(output), &waiting, &rejected));
            }
            if ran == 0
                && failures == 0
                && !waiting.is_empty()
                && !owes_the_model(target.context(), &explicit)
            {
                return Ok(report(Finish::Waiting { turns: turn }, &waiting, &rejected));
            }
        }
        Ok(report(
            Finish::Unfinished {
                turns: self.max_turns,
            },
            &waiting,
            &rejected,
        ))
    }

    /// The context's tools, then the caller's (R35).
    fn tools_of(&self, context: &Context) -> Result<Tools> {
        let mut tools = Tools::from_context(context)?;
        for tool in &self.tools {
            tools.add(tool.clone());
        }
        Ok(tools)
    }

    /// What each call of a turn is checked against.
    fn rules<'a>(&self, tools: &'a Tools, instances: &'a [agent_core::Instance]) -> Rules<'a> {
        let may_name = if self.new_instances {
            CallInstances::Any
        } else {
            CallInstances::Existing(instances)
        };
        Rules {
            tools,
            guard: Guard::new(may_name),
            max_calls: self.max_calls,
            parallel: self.parallel,
        }
    }
}

/// What the global `error` view holds when it is not a list (written by
/// the application: a model's call cannot write it, R39b), so the loop's
/// next error starts a new list instead of failing to push.
fn not_a_list(context: &Context) -> Option<&'static str> {
    let view = context.view(&Kind::new("error").ok()?, None)?;
    (!view.is_array()).then(|| agent_core::json_type(view))
}

/// The o200k tokens of the system text and `chat`, for a provider that
/// does not count them.
fn counted(chat: &[agent_render::ChatMessage]) -> u64 {
    let texts: usize = chat
        .iter()
        .map(|m| agent_render::count_tokens(m.text()))
        .sum();
    (agent_render::count_tokens(SYSTEM_TEXT) + texts) as u64
}

/// `None` when `output` is valid, else its violations in one line.
fn output_violations(schema: Option<&Schema>, output: &Value) -> Option<String> {
    let violations = schema?.violations(output, CheckMode::Complete);
    if violations.is_empty() {
        return None;
    }
    let texts: Vec<String> = violations.iter().map(ToString::to_string).collect();
    Some(texts.join("; "))
}

/// The `output` message (R40): the value set as the `output` view.
fn output_message(output: &Value) -> Result<Message> {
    let mut built = Message::from_value(json!({
        "type": "data",
        "kind": "output",
        "data": output,
        "_outputMethod": "set"
    }))
    .map_err(Error::Record)?;
    built
        .pop()
        .ok_or_else(|| Error::Request("the output message normalised to nothing".into()))
}
