//! The routes of `agentctx inspect`: the page, and the JSON API under
//! `/api/` it reads (docs/inspect.md). Every route only reads.

use super::{Shared, Status};
use agent_core::json;
use agent_core::json::{Map, Value};
use agent_data::{Context, Message};
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// Messages `/api/log` returns when `limit` is not given.
const DEFAULT_LIMIT: usize = 100;

/// The most `/api/log` returns at once: a page, however many were asked.
const MAX_LIMIT: usize = 1000;

/// The newest messages `/api/provenance` describes whole (`made`); the
/// others are named by number only.
const PROVENANCE_SHOWN: usize = 20;

/// The routes, before the guard every one of them goes through.
pub(super) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/", get(page))
        .route("/inspect.js", get(script))
        .route("/plan.js", get(plan_script))
        .route("/changes.js", get(changes_script))
        .route("/inspect.css", get(style))
        .route("/favicon.svg", get(icon))
        .route("/api/log", get(log))
        .route("/api/views", get(views))
        .route("/api/instances", get(instances))
        .route("/api/digest", get(digest))
        .route("/api/inputs", get(inputs))
        .route("/api/plan", get(plan))
        .route("/api/prompt", get(prompt))
        .route("/api/provenance", get(provenance))
        .route("/api/events", get(events))
        .fallback(not_found)
}

/// A JSON response.
fn json_response(status: StatusCode, value: &Value) -> Response {
    let mut text = String::new();
    json::write_into(&mut text, value, json::Style::Compact);
    text.push('\n');
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        text,
    )
        .into_response()
}

/// A refused request: `{"error": TEXT}`.
pub(super) fn error(status: StatusCode, text: impl std::fmt::Display) -> Response {
    json_response(status, &json!({"error": text.to_string()}))
}

async fn page() -> Response {
    asset("text/html; charset=utf-8", include_str!("page.html"))
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("inspect.js"))
}

async fn plan_script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("plan.js"))
}

async fn changes_script() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("changes.js"))
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("inspect.css"))
}

/// The tab's icon, so the browser's own request for one is answered.
async fn icon() -> Response {
    asset(
        "image/svg+xml",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">\
         <rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#1750eb\"/></svg>",
    )
}

/// A file built into the binary.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn not_found(uri: Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "no such page: {}; the API is /api/log, /api/digest, /api/inputs, /api/views, \
             /api/instances, /api/plan, /api/prompt, /api/provenance and /api/events",
            uri.path()
        ),
    )
}

/// `at`, checked against the context's length; the refusal's text when it
/// is past it.
fn point(at: Option<usize>, length: usize) -> Result<usize, String> {
    match at {
        Some(k) if k > length => Err(format!(
            "at={k}: {}",
            agent_data::Error::PastTheEnd { at: k, len: length }
        )),
        Some(k) => Ok(k),
        None => Ok(length),
    }
}

/// The query of `/api/log`.
#[derive(serde::Deserialize)]
pub(super) struct LogQuery {
    from: Option<usize>,
    before: Option<usize>,
    limit: Option<usize>,
    kind: Option<String>,
    instance: Option<String>,
    q: Option<String>,
}

/// The point a query names (`at`; default: the latest), read from the
/// query string beside each route's own fields.
#[derive(serde::Deserialize)]
pub(super) struct Point {
    at: Option<usize>,
}

/// A route's query that has no fields of its own beside the point.
#[derive(serde::Deserialize)]
pub(super) struct NoFields {}

/// Which context an answer reads.
#[derive(Clone, Copy)]
enum Cut {
    /// The context as it was at the point: its first `at` messages,
    /// folded again.
    Prefix,
    /// The whole context; the answer stops at the point itself.
    Whole,
}

/// Answers a query about the context at the point it names: checks the
/// query and the point, then runs `answer` on the context (cut as `cut`
/// says), the query, the point and the context's length, off the threads that answer — going
/// back refolds, and filters walk the whole log. An `Err` from `answer`
/// is a bad query (400).
async fn answer_at<Q: Send + 'static>(
    shared: Arc<Shared>,
    (point_asked, query): (
        Result<Query<Point>, QueryRejection>,
        Result<Query<Q>, QueryRejection>,
    ),
    cut: Cut,
    answer: impl FnOnce(&Context, Q, usize, usize) -> Result<Value, String> + Send + 'static,
) -> Response {
    let (Query(Point { at }), Query(query)) = match (point_asked, query) {
        (Ok(at), Ok(query)) => (at, query),
        (Err(_), _) => {
            let length = shared.status.borrow().length;
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "at: not a point: a point is a whole number of messages, 0 to {length} \
                     (the context's length)"
                ),
            );
        }
        (_, Err(rejection)) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    // A few answers at a time: each may refold the log, and any page the
    // browser visits can send requests here even though it cannot read
    // the answers.
    let Ok(_permit) = Arc::clone(&shared.answering).acquire_owned().await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    // Off the threads that answer: the context is taken while the poller
    // is not folding what was appended into it.
    let body = tokio::task::spawn_blocking(move || {
        let context = shared.context();
        let length = context.len();
        let at = point(at, length)?;
        let past = match cut {
            Cut::Prefix if at < length => Some(shared.past.at(&context, at)?),
            Cut::Prefix | Cut::Whole => None,
        };
        let mut body = answer(past.as_deref().unwrap_or(&context), query, at, length)?;
        if let Some(fields) = body.as_object_mut() {
            fields.insert("at".into(), json!(at));
            fields.insert("length".into(), json!(length));
        }
        Ok::<_, String>(body)
    })
    .await;
    match body {
        Ok(Ok(body)) => json_response(StatusCode::OK, &body),
        Ok(Err(text)) => error(StatusCode::BAD_REQUEST, text),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `GET /api/log`: a page of the messages that match, in order.
async fn log(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<LogQuery>, QueryRejection>,
) -> Response {
    let name = shared.name.clone();
    answer_at(
        shared,
        (point, query),
        Cut::Whole,
        move |context, query, end, _| Ok(log_page(context, &query, end, &name)),
    )
    .await
}

fn log_page(context: &Context, query: &LogQuery, end: usize, name: &str) -> Value {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT);
    let needle = query.q.as_deref().map(str::to_lowercase);
    let matches = |index: usize| {
        let identity = context.message_identity(index);
        let kind_ok = query
            .kind
            .as_deref()
            .is_none_or(|kind| identity.is_some_and(|id| id.kind.as_str() == kind));
        let instance_ok = query.instance.as_deref().is_none_or(|x| {
            identity.is_some_and(|id| id.instance.as_ref().is_some_and(|i| i.as_str() == x))
        });
        let text_ok = needle.as_deref().is_none_or(|needle| {
            context
                .message_json(index)
                .is_some_and(|text| text.to_lowercase().contains(needle))
        });
        kind_ok && instance_ok && text_ok
    };
    // A page is the first `limit` matches from `from`, or with `before`
    // the last `limit` matches before it.
    let page: Vec<usize> = match query.before {
        Some(before) => {
            let mut page: Vec<usize> = (0..before.min(end))
                .rev()
                .filter(|&index| matches(index))
                .take(limit)
                .collect();
            page.reverse();
            page
        }
        None => (query.from.unwrap_or(0).min(end)..end)
            .filter(|&index| matches(index))
            .take(limit)
            .collect(),
    };
    // Where the pages next to it start: the matches just outside it.
    let after = page.last().map_or_else(
        || query.before.unwrap_or(query.from.unwrap_or(0)).min(end),
        |last| last + 1,
    );
    let next = (after..end).find(|&index| matches(index));
    let previous = page
        .first()
        .and_then(|&first| (0..first).rev().find(|&index| matches(index)));
    let messages: Vec<Value> = page.iter().map(|&index| entry(context, index)).collect();
    json!({
        "context": name,
        "messages": messages,
        "next": next,
        "previous": previous,
    })
}

/// One message of the log with what it is, where it wrote, and the call
/// that wrote it.
fn entry(context: &Context, index: usize) -> Value {
    let Some(message) = context.message(index) else {
        return json!({"number": index});
    };
    let fields = message.fields();
    let kind_type = match &message {
        Message::Text(_) => "text".to_owned(),
        Message::Data(_) => "data".to_owned(),
        Message::Opaque(opaque) => opaque.type_name().to_owned(),
        Message::Native(_) => "native".to_owned(),
    };
    let data = message.as_data();
    // A later message of a fanned-out result names, by `_callAt`, how many
    // messages back the one carrying the call is.
    let call_at = fields
        .get("_callAt")
        .and_then(Value::as_i64)
        .and_then(|back| index.checked_add_signed(isize::try_from(back).ok()?));
    json!({
        "number": index,
        "type": kind_type,
        "kind": data.map(|d| d.kind().as_str()),
        "instance": data.and_then(|d| d.instance()).map(|x| x.as_str()),
        "method": data.map(|d| d.method().as_str()),
        "path": fields.get("_outputPath"),
        "date": fields.get("_date"),
        "ms": super::plan::took_ms(fields),
        "worker": fields.get("_worker"),
        "attempt": fields.get("_attempt"),
        "call": fields.get("_call"),
        "callAt": call_at,
        "message": message.to_value(),
    })
}

/// The query of `/api/views`.
#[derive(serde::Deserialize)]
pub(super) struct ViewsQuery {
    /// Only this instance's views beside the global ones.
    instance: Option<String>,
    /// `none`: no instance's views, only the global ones (and every kind).
    instances: Option<String>,
}

/// The query of `/api/digest` and `/api/inputs`: one message.
#[derive(serde::Deserialize)]
pub(super) struct MessageQuery {
    n: usize,
}

impl MessageQuery {
    /// The message's number, when it is among the first `end`.
    fn among(&self, end: usize) -> Result<usize, String> {
        let n = self.n;
        if n >= end {
            return Err(format!(
                "n={n}: there is no message {n} among the first {end} (0 to {})",
                end.saturating_sub(1)
            ));
        }
        Ok(n)
    }
}

/// `GET /api/digest?n=N`: the chain's digest after message N (R34e), as
/// `verify` computes it: from the first message on.
async fn digest(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<MessageQuery>, QueryRejection>,
) -> Response {
    answer_at(
        shared,
        (point, query),
        Cut::Whole,
        |context, query, end, _| {
            let n = query.among(end)?;
            let lines = (0..=n).map(|i| context.message_json(i).unwrap_or_default().as_bytes());
            Ok(json!({"number": n, "digest": agent_data::Digest::of(lines).to_string()}))
        },
    )
    .await
}

/// `GET /api/inputs?n=N`: the call message N answers (its `_call`), its
/// parameters resolved against the context as it was just before N was
/// written — what the activity was given, as near as the log can say.
async fn inputs(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<MessageQuery>, QueryRejection>,
) -> Response {
    answer_at(
        shared,
        (point, query),
        Cut::Whole,
        |context, query, end, _| {
            let n = query.among(end)?;
            let call = context
                .message(n)
                .and_then(|m| m.fields().get("_call").cloned())
                .ok_or_else(|| format!("n={n}: message {n} carries no call (`_call`)"))?;
            let before = context.prefix(n).map_err(|e| e.to_string())?;
            Ok(match agent_vars::resolve_call(&call, &before) {
                Ok(agent_vars::Resolution::Ready(resolved)) => {
                    json!({"number": n, "inputs": resolved, "missing": []})
                }
                Ok(agent_vars::Resolution::Pending(missing)) => json!({
                    "number": n,
                    "inputs": null,
                    "missing": missing.iter().map(ToString::to_string).collect::<Vec<_>>(),
                }),
                Err(e) => return Err(format!("n={n}: its call does not resolve: {e}")),
            })
        },
    )
    .await
}

/// `GET /api/views`: each kind's view, global and per instance (or only
/// the one asked for), at `at`.
async fn views(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<ViewsQuery>, QueryRejection>,
) -> Response {
    answer_at(
        shared,
        (point, query),
        Cut::Prefix,
        |context, query, at, _| {
            let only = match (query.instance.as_deref(), query.instances.as_deref()) {
                (_, Some(other)) if other != "none" => {
                    return Err(format!(
                        "instances {}: expected none (or leave it out for every instance's views)",
                        agent_core::quoted(other)
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err("instance and instances=none: ask for one or the other".to_owned());
                }
                (None, Some(_)) => Only::Global,
                (None, None) => Only::Every,
                (Some(id), None) => Only::One(
                    context
                        .instances()
                        .find(|x| x.as_str() == id)
                        .ok_or_else(|| {
                            format!(
                                "instance {}: there is none among the first {at} messages",
                                agent_core::quoted(id)
                            )
                        })?,
                ),
            };
            Ok(views_of(context, &only))
        },
    )
    .await
}

/// Whose views `/api/views` answers with beside the global ones.
enum Only<'c> {
    Every,
    Global,
    One(&'c agent_core::Instance),
}

impl Only<'_> {
    fn wants(&self, instance: &agent_core::Instance) -> bool {
        match self {
            Only::Every => true,
            Only::Global => false,
            Only::One(one) => *one == instance,
        }
    }
}

/// The views of `context`: each kind's global view, and for each instance
/// `only` names each kind it wrote, as read in it (its layer over the
/// global one).
fn views_of(context: &Context, only: &Only<'_>) -> Value {
    let mut kinds: Vec<&agent_core::Kind> = Vec::new();
    let mut global = Map::new();
    let mut instances = Map::new();
    if let Only::One(one) = only {
        instances.insert(one.as_str().to_owned(), Value::Object(Map::new()));
    } else if let Only::Every = only {
        for instance in context.instances() {
            instances.insert(instance.as_str().to_owned(), Value::Object(Map::new()));
        }
    }
    for identity in context.identities() {
        if !kinds.contains(&&identity.kind) {
            kinds.push(&identity.kind);
        }
        match &identity.instance {
            None => {
                let view = context.view(&identity.kind, None).cloned();
                global.insert(identity.kind.as_str().to_owned(), view.into());
            }
            Some(x) if !only.wants(x) => {}
            Some(x) => {
                let view = context.view(&identity.kind, Some(x)).cloned();
                if let Some(Value::Object(own)) = instances.get_mut(x.as_str()) {
                    own.insert(identity.kind.as_str().to_owned(), view.into());
                }
            }
        }
    }
    let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    json!({
        "kinds": kinds,
        "global": global,
        "instances": instances,
    })
}

/// The query of `/api/instances`.
#[derive(serde::Deserialize)]
pub(super) struct InstancesQuery {
    from: Option<usize>,
    limit: Option<usize>,
    q: Option<String>,
}

/// `GET /api/instances`: a page of the instances at `at`, in order of
/// first appearance, each with the kinds it wrote and its messages.
async fn instances(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<InstancesQuery>, QueryRejection>,
) -> Response {
    answer_at(
        shared,
        (point, query),
        Cut::Prefix,
        |context, query, _, _| Ok(instances_of(context, &query)),
    )
    .await
}

fn instances_of(context: &Context, query: &InstancesQuery) -> Value {
    // One walk over the layers: each instance's kinds and messages.
    let mut own: std::collections::HashMap<&str, (Vec<&str>, usize)> =
        std::collections::HashMap::new();
    for identity in context.identities() {
        if let Some(x) = &identity.instance {
            let (kinds, messages) = own.entry(x.as_str()).or_default();
            kinds.push(identity.kind.as_str());
            *messages += context.layer_len(identity);
        }
    }
    let needle = query.q.as_deref().map(str::to_lowercase);
    let matching: Vec<&str> = context
        .instances()
        .map(|x| x.as_str())
        .filter(|x| {
            needle
                .as_deref()
                .is_none_or(|needle| x.to_lowercase().contains(needle))
        })
        .collect();
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT);
    let page: Vec<Value> = matching
        .iter()
        .skip(query.from.unwrap_or(0))
        .take(limit)
        .map(|&id| {
            let (kinds, messages) = own.get(id).cloned().unwrap_or_default();
            json!({"id": id, "kinds": kinds, "messages": messages})
        })
        .collect();
    json!({
        "total": context.instances().len(),
        "matching": matching.len(),
        "instances": page,
    })
}

/// `GET /api/plan`: the newest plan at `at`, each call's standing.
async fn plan(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<NoFields>, QueryRejection>,
) -> Response {
    let latest = Arc::clone(&shared);
    answer_at(
        shared,
        (point, query),
        Cut::Prefix,
        move |context, _, at, length| {
            // Who holds which call is in the calls table, which has no past.
            let stored = (at == length).then(|| latest.calls_table()).flatten();
            Ok(json!({"plan": super::plan::plan_at(context, stored.as_deref())}))
        },
    )
    .await
}

/// `GET /api/prompt`: a page of what the model sees at `at`, in `mode`.
async fn prompt(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<super::prompt::PromptQuery>, QueryRejection>,
) -> Response {
    let prompts = Arc::clone(&shared);
    answer_at(
        shared,
        (point, query),
        Cut::Prefix,
        move |context, query, at, _| prompts.prompts.page(context, at, &query),
    )
    .await
}

/// The query of `/api/provenance`.
#[derive(serde::Deserialize)]
pub(super) struct ProvenanceQuery {
    kind: String,
    instance: Option<String>,
    path: Option<String>,
}

/// `GET /api/provenance`: the messages that made a value of a view at `at`.
async fn provenance(
    State(shared): State<Arc<Shared>>,
    point: Result<Query<Point>, QueryRejection>,
    query: Result<Query<ProvenanceQuery>, QueryRejection>,
) -> Response {
    answer_at(
        shared,
        (point, query),
        Cut::Prefix,
        |context, query, _, _| {
            let place = super::about::Place::parse(
                &query.kind,
                query.instance.as_deref(),
                query.path.as_deref().unwrap_or("[]"),
            )?;
            let messages = super::about::provenance(context, &place);
            // The newest few as the log shows them: what wrote each, and the
            // call it answered.
            let made: Vec<Value> = messages
                .iter()
                .rev()
                .take(PROVENANCE_SHOWN)
                .rev()
                .map(|&index| entry(context, index))
                .collect();
            Ok(json!({"messages": messages, "made": made}))
        },
    )
    .await
}

/// `GET /api/events`: server-sent events as the context grows.
async fn events(
    State(shared): State<Arc<Shared>>,
) -> Sse<impl futures_core::Stream<Item = Result<Event, Infallible>>> {
    let mut receiver = shared.status.subscribe();
    let now = receiver.borrow_and_update().clone();
    // What stands now: the length, and a failure to read that has not
    // cleared yet, which a page opened after it must see too.
    let mut first = vec![event("length", &json!({"length": now.length}))];
    if let Some(text) = &now.error {
        first.push(event(
            "error",
            &json!({"error": text, "length": now.length}),
        ));
    }
    first.reverse();
    let stream = futures_util::stream::unfold(
        (receiver, first, now),
        |(mut receiver, mut first, mut last)| async move {
            if let Some(next) = first.pop() {
                return Some((Ok(next), (receiver, first, last)));
            }
            loop {
                // The sender lives as long as the server: this ends only
                // with it.
                receiver.changed().await.ok()?;
                let status: Status = receiver.borrow_and_update().clone();
                let next = if status.length != last.length {
                    Some(event(
                        "messages",
                        &json!({"from": last.length, "length": status.length}),
                    ))
                } else {
                    status.error.as_ref().map(|text| {
                        event("error", &json!({"error": text, "length": status.length}))
                    })
                };
                last = status;
                if let Some(next) = next {
                    return Some((Ok(next), (receiver, Vec::new(), last)));
                }
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// One server-sent event named `name` with `data` as its JSON.
fn event(name: &str, data: &Value) -> Event {
    let mut text = String::new();
    json::write_into(&mut text, data, json::Style::Compact);
    Event::default().event(name).data(text)
}
