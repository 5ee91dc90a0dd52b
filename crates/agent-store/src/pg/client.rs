//! A blocking PostgreSQL client that never waits forever.
//!
//! Server-side timeouts and TCP keepalives cannot notice a server (or a
//! proxy in between) that keeps the connection open and stops answering:
//! the kernel still acknowledges every packet. So every call on this
//! client has a deadline on silence: when the server sent no byte for the
//! idle timeout while a call waits for it, the connection fails with an
//! I/O error saying so. A call that keeps receiving bytes (a long load,
//! streamed) is never cut: each byte restarts the clock. Between calls
//! nothing waits, and waiting for a notification has a timeout of its own.
//!
//! It is [`tokio_postgres`] on a runtime of its own, as the `postgres`
//! crate is; that crate cannot put anything between the client and its
//! socket, and this one must.
//!
//! It also knows whether it talks to the server itself or to a
//! transaction pooler in between (D109: behind a pooler), which hands each
//! transaction to any of its server sessions: then no statement is named
//! (a [`Sql`] is sent unnamed with its parameters' types), and nothing
//! lasts past a transaction.

use super::pooling::{Login, Near, Session};
use super::sql::{Sql, WHO};
use std::collections::{HashMap, VecDeque};
use std::future::{Future, poll_fn};
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::Host;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::{BorrowToSql, ToSql, Type};
use tokio_postgres::{
    AsyncMessage, Config, Connection, Error, NoTls, Notification, Row, RowStream,
    SimpleQueryMessage, Statement,
};

/// How long connecting may take when the configuration does not say.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// When the server last made itself heard, shared by the socket (which
/// hears it) and the calls (which judge the silence).
#[derive(Debug)]
struct Watch {
    origin: Instant,
    /// Nanoseconds after `origin` the server last sent a byte, or a call
    /// began (the server cannot answer before it is asked).
    heard: AtomicU64,
    /// The deadline passed: the socket fails every read from now on.
    expired: AtomicBool,
    /// The longest silence a call accepts; `None` waits forever.
    limit: Option<Duration>,
}

impl Watch {
    fn hear(&self) {
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.heard.store(nanos, Ordering::Relaxed);
    }

    fn deadline(&self) -> Option<Instant> {
        let heard = Duration::from_nanos(self.heard.load(Ordering::Relaxed));
        self.limit.map(|limit| self.origin + heard + limit)
    }

    fn error(&self) -> io::Error {
        let seconds = self.limit.unwrap_or_default().as_secs_f64();
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the server sent nothing for {seconds} s while a query waited for its answer \
                 (the server or a proxy in between stopped answering; \
                 agentctx_idle_timeout=SECONDS in the URL sets this deadline)"
            ),
        )
    }
}

/// The connection's socket.
enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// The socket as the client sees it: every byte read is heard, and once
/// the deadline passed every read fails.
pub(crate) struct Stream {
    socket: Socket,
    watch: Arc<Watch>,
    /// Reads the login's messages as they pass (D109: behind a pooler).
    login: Login,
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.watch.expired.load(Ordering::Relaxed) {
            return Poll::Ready(Err(this.watch.error()));
        }
        let before = buf.filled().len();
        let polled = match &mut this.socket {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        };
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.watch.hear();
            this.login.feed(&buf.filled()[before..]);
        }
        polled
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().socket {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, data),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().socket {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().socket {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// What a call drives besides its own future: the runtime, the connection
/// (which reads and writes the socket), notifications it delivered.
struct Driver {
    runtime: tokio::runtime::Runtime,
    connection: Connection<Stream, NoTlsStream>,
    notifications: VecDeque<Notification>,
    watch: Arc<Watch>,
    /// The connection failed or ended: the client must be replaced.
    broken: bool,
}

impl Driver {
    /// Polls `f` until it is ready, driving the connection meanwhile; with
    /// `idle`, fails the connection after the server's silence outlasts
    /// the idle timeout.
    fn run<T>(
        &mut self,
        idle: bool,
        mut f: impl FnMut(&mut Context<'_>, &mut VecDeque<Notification>) -> Poll<Result<T, Error>>,
    ) -> Result<T, Error> {
        self.watch.hear();
        let Driver {
            runtime,
            connection,
            notifications,
            watch,
            broken,
        } = self;
        runtime.block_on(async {
            let mut sleep = match (idle, watch.deadline()) {
                (true, Some(deadline)) => Some(Box::pin(tokio::time::sleep_until(deadline.into()))),
                _ => None,
            };
            poll_fn(|cx| {
                loop {
                    match connection.poll_message(cx) {
                        Poll::Ready(Some(Ok(AsyncMessage::Notification(n)))) => {
                            notifications.push_back(n)
                        }
                        Poll::Ready(Some(Ok(_))) => {}
                        // The connection's error wins over a call that
                        // finished in the same read: a statement inside a
                        // transaction whose session then ended must not
                        // look done (its COMMIT would go to a new session).
                        Poll::Ready(Some(Err(e))) => {
                            *broken = true;
                            return Poll::Ready(Err(e));
                        }
                        Poll::Ready(None) => {
                            *broken = true;
                            break;
                        }
                        Poll::Pending => break,
                    }
                }
                if let Poll::Ready(done) = f(cx, notifications) {
                    return Poll::Ready(done);
                }
                if let Some(sleep) = sleep.as_mut() {
                    while sleep.as_mut().poll(cx).is_ready() {
                        match watch.deadline() {
                            Some(deadline) if Instant::now() < deadline => {
                                sleep.as_mut().reset(deadline.into())
                            }
                            _ => {
                                // The next read of the socket fails, and with
                                // it the connection and this call.
                                watch.expired.store(true, Ordering::Relaxed);
                                cx.waker().wake_by_ref();
                                return Poll::Pending;
                            }
                        }
                    }
                }
                Poll::Pending
            })
            .await
        })
    }

    fn wait<T>(&mut self, future: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let mut future = pin!(future);
        self.run(true, |cx, _| future.as_mut().poll(cx))
    }
}

/// A connection to PostgreSQL whose every call ends: with the server's
/// answer, or with an error once the server stayed silent for the idle
/// timeout.
pub(crate) struct Client {
    client: tokio_postgres::Client,
    driver: Driver,
    /// Through a transaction pooler: nothing named, nothing kept.
    pooled: bool,
    /// Statements prepared on this (direct) connection, by their text.
    prepared: HashMap<&'static str, Statement>,
    /// The longest a statement waits for a lock, in milliseconds (`0`
    /// waits forever); `None` leaves the URL's own options to say.
    lock_timeout: Option<u128>,
}

/// What waiting for a notification came to.
pub(crate) enum Waited {
    Notified,
    TimedOut,
    /// The connection failed: a notification may have been lost with it.
    Lost,
}

impl Client {
    /// Connects as `address` says — its hosts in turn, its keepalives —
    /// giving up after its connect timeout (including the server's
    /// answers while logging in). Its idle timeout is the longest silence a
    /// call accepts from the server (`None` waits forever); unless it says
    /// whether a transaction pooler sits in between, the server is asked.
    pub(crate) fn connect(address: &super::address::Address) -> Result<Client, String> {
        let (config, idle, pooled) = (&address.config, address.idle, address.pooled);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the client: {e}"))?;
        let limit = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        let watch = Arc::new(Watch {
            origin: Instant::now(),
            heard: AtomicU64::new(0),
            expired: AtomicBool::new(false),
            limit: idle,
        });
        // The timer must be made inside the runtime.
        let opened =
            runtime.block_on(async { tokio::time::timeout(limit, open(config, &watch)).await });
        let (client, connection, near, key) = opened.map_err(|_| {
            format!(
                "timeout waiting for server ({} s; set connect_timeout=SECONDS in the URL)",
                limit.as_secs_f64()
            )
        })??;
        let mut client = Client {
            client,
            driver: Driver {
                runtime,
                connection,
                notifications: VecDeque::new(),
                watch,
                broken: false,
            },
            pooled: true,
            prepared: HashMap::new(),
            lock_timeout: address.lock_timeout.map(|t| t.as_millis()),
        };
        client.pooled = match pooled {
            Some(pooled) => pooled,
            None => client
                .is_pooled(&near, &key)
                .map_err(|e| super::session::describe(&e))?,
        };
        Ok(client)
    }

    /// Whether a pooler is in between (`pooling.rs`): asks the server
    /// session who it is, in one simple query, which names nothing.
    fn is_pooled(&mut self, near: &Near, key: &AtomicI64) -> Result<bool, Error> {
        let messages = self.driver.wait(self.client.simple_query(WHO))?;
        let Some(row) = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        }) else {
            return Ok(true);
        };
        let session = Session {
            pid: row.get(0),
            client_address: row.get(1),
            client_port: row.get(2),
            port: row.get(3),
            socket_directories: row.get(4).unwrap_or_default(),
        };
        Ok(super::pooling::pooled(near, key, &session))
    }

    /// Sets the lock timeout for the session: on a direct connection,
    /// where a session is this client's own.
    pub(crate) fn set_lock_timeout(&mut self) -> Result<(), Error> {
        match self.lock_timeout {
            Some(ms) if !self.pooled => self.batch_execute(&format!("SET lock_timeout = {ms}")),
            _ => Ok(()),
        }
    }

    /// Starts a transaction; through a pooler, with the lock timeout set
    /// for it, as no session setting lasts there.
    pub(crate) fn begin(&mut self) -> Result<(), Error> {
        match self.lock_timeout {
            Some(ms) if self.pooled => {
                self.batch_execute(&format!("BEGIN; SET LOCAL lock_timeout = {ms}"))
            }
            _ => self.batch_execute("BEGIN"),
        }
    }

    /// True when a transaction pooler sits between this client and the
    /// server (D109: behind a pooler).
    pub(crate) fn pooled(&self) -> bool {
        self.pooled
    }

    /// Reads, without waiting, what the server sent while no call drove the
    /// connection: a session it ended meanwhile (a restart, an idle
    /// timeout) is then [`Client::is_closed`]. Pending once, awake: the
    /// runtime turns its reactor before the second poll.
    pub(crate) fn look(&mut self) {
        let mut yielded = false;
        let _ = self.driver.run(false, |cx, _| {
            if yielded {
                return Poll::Ready(Ok(()));
            }
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        });
    }

    /// True when the connection failed or ended: use another.
    pub(crate) fn is_closed(&self) -> bool {
        self.driver.broken || self.client.is_closed()
    }

    /// Prepares the statements `sqls` on a direct connection, so their
    /// first use costs one round trip; nothing through a pooler.
    pub(crate) fn prepare_all(&mut self, sqls: &[&Sql]) -> Result<(), Error> {
        for sql in sqls {
            self.statement(sql)?;
        }
        Ok(())
    }

    /// How many statements are prepared on this connection (each cost a
    /// round trip once).
    pub(crate) fn prepared(&self) -> usize {
        self.prepared.len()
    }

    /// `sql`'s statement prepared on this connection (once), or `None`
    /// through a pooler, where it is sent unnamed each time.
    fn statement(&mut self, sql: &Sql) -> Result<Option<Statement>, Error> {
        if self.pooled {
            return Ok(None);
        }
        if let Some(statement) = self.prepared.get(sql.text) {
            return Ok(Some(statement.clone()));
        }
        let statement = self
            .driver
            .wait(self.client.prepare_typed(sql.text, sql.types))?;
        self.prepared.insert(sql.text, statement.clone());
        Ok(Some(statement))
    }

    /// The parameter types the server infers for `text`, prepared with
    /// none given.
    #[cfg(test)]
    pub(crate) fn inferred_types(&mut self, text: &str) -> Result<Vec<Type>, Error> {
        let statement = self.driver.wait(self.client.prepare(text))?;
        Ok(statement.params().to_vec())
    }

    /// Runs `sql`; its rows.
    pub(crate) fn query(
        &mut self,
        sql: &Sql,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        match self.statement(sql)? {
            Some(statement) => self.driver.wait(self.client.query(&statement, params)),
            None => {
                let typed = typed(sql, params);
                self.driver.wait(self.client.query_typed(sql.text, &typed))
            }
        }
    }

    /// Runs `sql`, which returns exactly one row.
    pub(crate) fn query_one(
        &mut self,
        sql: &Sql,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        match self.statement(sql)? {
            Some(statement) => self.driver.wait(self.client.query_one(&statement, params)),
            None => {
                let typed = typed(sql, params);
                self.driver
                    .wait(self.client.query_typed_one(sql.text, &typed))
            }
        }
    }

    /// Runs `sql`, which returns at most one row.
    pub(crate) fn query_opt(
        &mut self,
        sql: &Sql,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        match self.statement(sql)? {
            Some(statement) => self.driver.wait(self.client.query_opt(&statement, params)),
            None => {
                let typed = typed(sql, params);
                self.driver
                    .wait(self.client.query_typed_opt(sql.text, &typed))
            }
        }
    }

    /// Runs `sql`; how many rows it changed.
    pub(crate) fn execute(
        &mut self,
        sql: &Sql,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        match self.statement(sql)? {
            Some(statement) => self.driver.wait(self.client.execute(&statement, params)),
            None => {
                let typed = typed(sql, params);
                self.driver
                    .wait(self.client.execute_typed(sql.text, &typed))
            }
        }
    }

    /// Runs `sql`, one or more statements without parameters.
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.driver.wait(self.client.batch_execute(sql))
    }

    /// Runs `sql` and hands its rows over one at a time, as they arrive.
    pub(crate) fn query_raw<P, I>(&mut self, sql: &Sql, params: I) -> Result<RowIter<'_>, Error>
    where
        P: BorrowToSql,
        I: IntoIterator<Item = P>,
        I::IntoIter: ExactSizeIterator,
    {
        let rows = match self.statement(sql)? {
            Some(statement) => self
                .driver
                .wait(self.client.query_raw(&statement, params))?,
            None => {
                let typed = params.into_iter().zip(sql.types.iter().cloned());
                self.driver
                    .wait(self.client.query_typed_raw(sql.text, typed))?
            }
        };
        Ok(RowIter {
            client: self,
            rows: Box::pin(rows),
        })
    }

    /// Waits up to `timeout` for a notification, dropping it and any others
    /// that came with it. The server's silence is expected here: no idle
    /// deadline.
    pub(crate) fn wait_notification(&mut self, timeout: Duration) -> Waited {
        let mut sleep = None;
        let waited = self.driver.run(false, |cx, notifications| {
            if notifications.pop_front().is_some() {
                return Poll::Ready(Ok(Waited::Notified));
            }
            let sleep = sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
            match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Ok(Waited::TimedOut)),
                Poll::Pending => Poll::Pending,
            }
        });
        self.driver.notifications.clear();
        match waited {
            Ok(Waited::TimedOut) if self.driver.broken => Waited::Lost,
            Ok(waited) => waited,
            Err(_) => Waited::Lost,
        }
    }
}

/// `params` beside `sql`'s types, as an unnamed statement sends them.
fn typed<'p>(sql: &Sql, params: &[&'p (dyn ToSql + Sync)]) -> Vec<(&'p (dyn ToSql + Sync), Type)> {
    params
        .iter()
        .copied()
        .zip(sql.types.iter().cloned())
        .collect()
}

/// The rows of one query, fetched as they are read.
pub(crate) struct RowIter<'c> {
    client: &'c mut Client,
    rows: Pin<Box<RowStream>>,
}

impl RowIter<'_> {
    /// The next row; `None` after the last.
    pub(crate) fn next(&mut self) -> Result<Option<Row>, Error> {
        let rows = &mut self.rows;
        self.client.driver.run(true, |cx, _| {
            futures_core::Stream::poll_next(rows.as_mut(), cx).map(Option::transpose)
        })
    }
}

/// Opens a socket to the first of `config`'s hosts that answers and logs in.
/// A logged-in connection, this end of its socket and the process id its
/// login gave.
type Opened = (
    tokio_postgres::Client,
    Connection<Stream, NoTlsStream>,
    Near,
    Arc<AtomicI64>,
);

async fn open(config: &Config, watch: &Arc<Watch>) -> Result<Opened, String> {
    let hosts = config.get_hosts();
    let ports = config.get_ports();
    if hosts.is_empty() {
        return Err("no host to connect to: name one in the URL or in PGHOST".into());
    }
    let mut failure = String::new();
    for (i, host) in hosts.iter().enumerate() {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let socket = match host {
            Host::Tcp(name) => {
                let address = config.get_hostaddrs().get(i).map(ToString::to_string);
                let name = address.as_deref().unwrap_or(name);
                TcpStream::connect((name, port))
                    .await
                    .and_then(|s| tune(config, s))
                    .and_then(|s| Ok((Near::Tcp(s.local_addr()?), Socket::Tcp(s))))
            }
            Host::Unix(dir) => UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))
                .await
                .map(|s| (Near::Unix(dir.clone(), port), Socket::Unix(s))),
        };
        let (near, socket) = match socket {
            Ok(socket) => socket,
            Err(e) => {
                failure = format!("error connecting to server: {e}");
                continue;
            }
        };
        let (login, key) = Login::new();
        let stream = Stream {
            socket,
            watch: Arc::clone(watch),
            login,
        };
        match config.connect_raw(stream, NoTls).await {
            Ok((client, connection)) => return Ok((client, connection, near, key)),
            Err(e) => failure = super::session::describe(&e),
        }
    }
    Err(failure)
}

/// Sets the TCP options `config` asks for: no Nagle delay (requests are
/// whole messages), keepalives, and how long sent data may stay
/// unacknowledged.
fn tune(config: &Config, socket: TcpStream) -> io::Result<TcpStream> {
    socket.set_nodelay(true)?;
    let sock = socket2::SockRef::from(&socket);
    if config.get_keepalives() {
        let mut keepalive = socket2::TcpKeepalive::new().with_time(config.get_keepalives_idle());
        if let Some(interval) = config.get_keepalives_interval() {
            keepalive = keepalive.with_interval(interval);
        }
        if let Some(retries) = config.get_keepalives_retries() {
            keepalive = keepalive.with_retries(retries);
        }
        sock.set_tcp_keepalive(&keepalive)?;
    }
    #[cfg(target_os = "linux")]
    sock.set_tcp_user_timeout(config.get_tcp_user_timeout().copied())?;
    Ok(socket)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// The value of setting `name` as the server session sees it now.
    fn show(client: &mut Client, name: &str) -> String {
        let messages = client
            .driver
            .wait(client.client.simple_query(&format!("SHOW {name}")))
            .unwrap();
        messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .unwrap()
    }

    fn connect(parameters: &str) -> Client {
        let url = format!(
            "{}?{parameters}&context=unused",
            test_support::database::direct_url()
        );
        let address = super::super::address::Address::parse(&url).unwrap();
        Client::connect(&address).expect(test_support::database::HOW_TO_PROVIDE)
    }

    #[test]
    fn d109_the_lock_timeout_lasts_the_session_when_direct_and_each_transaction_when_pooled() {
        let mut direct = connect("agentctx_pooled=no&agentctx_lock_timeout=1.5");
        let before = show(&mut direct, "lock_timeout");
        direct.set_lock_timeout().unwrap();
        assert_eq!(show(&mut direct, "lock_timeout"), "1500ms");
        // Pooled (as the URL says): nothing set for the session, which
        // another client may get next; each transaction sets its own.
        let mut pooled = connect("agentctx_pooled=yes&agentctx_lock_timeout=1.5");
        pooled.set_lock_timeout().unwrap();
        assert_eq!(show(&mut pooled, "lock_timeout"), before);
        pooled.begin().unwrap();
        assert_eq!(show(&mut pooled, "lock_timeout"), "1500ms");
        pooled.batch_execute("COMMIT").unwrap();
        assert_eq!(show(&mut pooled, "lock_timeout"), before);
    }

    #[test]
    fn d109_a_direct_connection_is_found_direct_and_one_through_a_proxy_pooled() {
        let url = format!("{}?context=unused", test_support::database::direct_url());
        let address = super::super::address::Address::parse(&url).unwrap();
        assert!(!Client::connect(&address).unwrap().pooled());
        // A plain TCP relay in front: the server's client is the relay.
        let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = upstream.local_addr().unwrap().port();
        let server = address.config.get_ports().first().copied().unwrap_or(5432);
        std::thread::spawn(move || {
            for client in upstream.incoming().flatten() {
                let server = std::net::TcpStream::connect(("127.0.0.1", server)).unwrap();
                let (mut a, mut b) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || std::io::copy(&mut a, &mut b));
                let (mut c, mut d) = (server, client);
                std::thread::spawn(move || std::io::copy(&mut c, &mut d));
            }
        });
        let relayed = url.replacen(&format!(":{server}/"), &format!(":{port}/"), 1);
        let address = super::super::address::Address::parse(&relayed).unwrap();
        assert!(Client::connect(&address).unwrap().pooled(), "{relayed}");
    }
}
