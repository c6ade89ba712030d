//! `handoff bench --instances 1,3 --database-url postgres://…`: several Handoff instances on one
//! PostgreSQL against one instance on the embedded SQLite, in the same run. Per setup:
//! submissions per second (every client round-robin over the instances), claim latency on idle
//! instances (one task at a time: its `started_at - created_at`, p50/p99 — under load that
//! would measure the queue, not the claim), `get_task_status` latency p99, and on several
//! instances the takeover time after `kill -9` of the instance holding a task (bounded below by
//! the lease expiry the bench sets). On PostgreSQL also the time sessions spent waiting for
//! locks while the setup's tasks were submitted, claimed and run (sampled from
//! `pg_stat_activity` every few milliseconds), per submission, and the claim spread: the share
//! of the tasks each instance ran.
//! Ratios are against the SQLite row.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

use crate::{
    BenchError,
    client::{Era, McpClient},
    measure::Latency,
    run::http,
    target::Target,
};

/// What to compare.
#[derive(Debug, Clone)]
pub struct ScaleBenchOptions {
    /// A PostgreSQL server the bench may create (and drop) databases on.
    pub database_url: String,
    /// Instance counts to run on PostgreSQL.
    pub instances: Vec<usize>,
    /// Tasks submitted per setup.
    pub tasks: usize,
    /// Concurrent submitting clients.
    pub clients: usize,
}

/// The lease settings every instance runs with: short, so a takeover is measured in seconds.
const HEARTBEAT_MS: &str = "250";
const LEASE_EXPIRY_MS: &str = "1500";
/// Status calls measured per setup.
const STATUS_CALLS: usize = 300;
/// Tasks submitted one at a time for the claim latency.
const CLAIMS: usize = 30;

/// One setup's figures.
#[derive(Debug, Clone)]
struct Row {
    name: String,
    submissions_per_sec: f64,
    claim: Latency,
    status: Latency,
    takeover: Option<Duration>,
    /// Milliseconds spent waiting for locks per submission (PostgreSQL).
    lock_wait_ms: Option<f64>,
    /// Each instance's share of the submitted tasks, largest first (PostgreSQL).
    spread: Vec<f64>,
}

/// How often the lock sampler looks at `pg_stat_activity`.
const LOCK_SAMPLE: Duration = Duration::from_millis(20);

/// Runs every setup and prints the table.
pub async fn run_scale(exe: &Path, options: &ScaleBenchOptions) -> Result<(), BenchError> {
    let mut rows = vec![setup(exe, options, None, 1).await?];
    for &n in &options.instances {
        let database = Database::create(&options.database_url).await?;
        let row = setup(exe, options, Some(&database), n).await;
        database.drop().await;
        rows.push(row?);
    }
    print(&rows);
    Ok(())
}

/// Starts `n` instances (on `database`, else one on SQLite), measures, stops them.
async fn setup(
    exe: &Path,
    options: &ScaleBenchOptions,
    database: Option<&Database>,
    n: usize,
) -> Result<Row, BenchError> {
    let mut env: Vec<(&str, String)> = vec![
        (
            "HANDOFF_COMMAND_ARGV",
            r#"["bash", "-c", "{prompt}"]"#.into(),
        ),
        ("HANDOFF_DEFAULT_EXECUTOR", "command".into()),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument".into()),
        ("HANDOFF_COMPLETION_POLICY", "none".into()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".into()),
        ("HANDOFF_MAX_QUEUED_TASKS", "100000".into()),
        ("HANDOFF_HEARTBEAT_MS", HEARTBEAT_MS.into()),
        ("HANDOFF_LEASE_EXPIRY_MS", LEASE_EXPIRY_MS.into()),
    ];
    if let Some(database) = database {
        env.push(("HANDOFF_DATABASE_URL", database.url.clone()));
    }
    let mut targets = Vec::new();
    for _ in 0..n {
        targets.push(Target::handoff(exe, &env).await?);
    }
    let urls: Vec<String> = targets.iter().map(|t| t.url.clone()).collect();
    let name = match database {
        Some(_) => format!("PostgreSQL, {n} instance{}", if n == 1 { "" } else { "s" }),
        None => "SQLite, 1 instance".to_owned(),
    };
    let sampler = database.map(|d| LockSampler::start(d.url.clone()));
    let measured = measure(&urls, options).await;
    let lock_wait = match sampler {
        Some(sampler) => Some(sampler.stop().await),
        None => None,
    };
    let spread = match database {
        Some(database) => database.spread().await?,
        None => Vec::new(),
    };
    let takeover = match (database, measured.is_ok() && n > 1) {
        (Some(database), true) => Some(takeover(&mut targets, &urls, database).await),
        _ => None,
    };
    for target in targets {
        target.stop().await;
    }
    let (submissions_per_sec, claim, status, submitted) = measured?;
    Ok(Row {
        name,
        submissions_per_sec,
        claim,
        status,
        takeover: takeover.transpose()?,
        lock_wait_ms: lock_wait.map(|total| total.as_secs_f64() * 1e3 / submitted.max(1) as f64),
        spread,
    })
}

/// Submissions per second, claim latency, status latency and the number of submissions over
/// `urls`.
async fn measure(
    urls: &[String],
    options: &ScaleBenchOptions,
) -> Result<(f64, Latency, Latency, usize), BenchError> {
    let http = http()?;
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..options.clients.max(1) {
        let (http, urls) = (http.clone(), urls.to_vec());
        let count = options.tasks / options.clients.max(1);
        workers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..count {
                let url = &urls[(worker + i) % urls.len()];
                let mut client = McpClient::new(http.clone(), url, Era::Stateless, "bench");
                // Each different: the loop guard refuses a call repeated while its task runs.
                let script = format!("true # {worker}-{i}");
                let done = client
                    .tool("execute_task", json!({"task_description": script}))
                    .await?;
                ids.push((url.clone(), text(&done, "task_id")?));
            }
            Ok::<_, String>(ids)
        }));
    }
    let mut ids = Vec::new();
    for worker in workers {
        ids.extend(
            worker
                .await
                .map_err(|e| BenchError::Setup(e.to_string()))?
                .map_err(BenchError::Setup)?,
        );
    }
    let per_sec = ids.len() as f64 / started.elapsed().as_secs_f64();
    let submitted = ids.len();
    let (_, statuses) = follow(&http, urls, &ids).await?;
    let mut claims = Vec::new();
    for n in 0..CLAIMS {
        let url = &urls[n % urls.len()];
        let mut client = McpClient::new(http.clone(), url, Era::Stateless, "bench");
        let script = format!("true # alone {n}");
        let done = client
            .tool("execute_task", json!({"task_description": script}))
            .await
            .map_err(BenchError::Setup)?;
        let id = text(&done, "task_id").map_err(BenchError::Setup)?;
        // Finished before the next is submitted: each claim finds idle instances.
        let (mut claim, _) = follow(&http, urls, &[(url.clone(), id)]).await?;
        claims.append(&mut claim);
    }
    Ok((
        per_sec,
        Latency::of(claims),
        Latency::of(statuses),
        submitted,
    ))
}

/// Waits for every task to finish; their claim latencies (µs) and status call latencies (µs).
async fn follow(
    http: &reqwest::Client,
    urls: &[String],
    ids: &[(String, String)],
) -> Result<(Vec<f64>, Vec<f64>), BenchError> {
    let mut claims = Vec::new();
    let mut statuses = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    for (n, (_, id)) in ids.iter().enumerate() {
        // Asked of any instance: each answers for every task.
        let url = &urls[n % urls.len()];
        let mut client = McpClient::new(http.clone(), url, Era::Stateless, "bench");
        loop {
            let asked = Instant::now();
            let status = client
                .tool("get_task_status", json!({"task_id": id}))
                .await
                .map_err(BenchError::Setup)?;
            if statuses.len() < STATUS_CALLS {
                statuses.push(asked.elapsed().as_secs_f64() * 1e6);
            }
            if let (Some(created), Some(started)) = (
                status["created_at_ms"].as_i64(),
                status["started_at_ms"].as_i64(),
            ) && status["completed_at_ms"].as_i64().is_some()
            {
                claims.push((started - created) as f64 * 1e3);
                break;
            }
            if Instant::now() > deadline {
                return Err(BenchError::Setup(format!(
                    "task {id} did not finish in 600 s"
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Ok((claims, statuses))
}

/// `kill -9` of the instance holding a long task; the time until another instance reports the
/// task failed.
async fn takeover(
    targets: &mut Vec<Target>,
    urls: &[String],
    database: &Database,
) -> Result<Duration, BenchError> {
    let http = http()?;
    let mut client = McpClient::new(http.clone(), &urls[0], Era::Stateless, "bench");
    let submitted = client
        .tool("execute_task", json!({"task_description": "sleep 600"}))
        .await
        .map_err(BenchError::Setup)?;
    let id = text(&submitted, "task_id").map_err(BenchError::Setup)?;
    let holder = database.holder_pid(&id).await?;
    let at = targets
        .iter()
        .position(|t| t.pid == holder)
        .ok_or_else(|| BenchError::Setup("the holder is not one of the bench's".into()))?;
    let victim = targets.remove(at);
    let watcher = targets
        .first()
        .map(|t| t.url.clone())
        .ok_or_else(|| BenchError::Setup("no instance left to watch".into()))?;
    let killed = Instant::now();
    victim.kill_now().await;
    let mut client = McpClient::new(http, &watcher, Era::Stateless, "bench");
    loop {
        let status = client
            .tool("get_task_status", json!({"task_id": id}))
            .await
            .map_err(BenchError::Setup)?;
        if status["status"] == "failed" {
            return Ok(killed.elapsed());
        }
        if killed.elapsed() > Duration::from_secs(60) {
            return Err(BenchError::Setup("no takeover within 60 s".into()));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn text(value: &Value, field: &str) -> Result<String, String> {
    value[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no `{field}` in {value}"))
}

fn print(rows: &[Row]) {
    let Some(base) = rows.first() else { return };
    println!(
        "{:<26} {:>14} {:>8} {:>16} {:>18} {:>10} {:>12}  claim spread",
        "setup",
        "submissions/s",
        "ratio",
        "claim p50/p99 ms",
        "status p99 ms",
        "takeover",
        "lock wait ms"
    );
    for row in rows {
        let ratio = row.submissions_per_sec / base.submissions_per_sec;
        let status_ratio = row.status.p99 / base.status.p99;
        let takeover = row
            .takeover
            .map_or("—".to_owned(), |t| format!("{:.2} s", t.as_secs_f64()));
        let lock_wait = row
            .lock_wait_ms
            .map_or("—".to_owned(), |ms| format!("{ms:.2}"));
        let spread = row
            .spread
            .iter()
            .map(|share| format!("{:.0}%", share * 100.0))
            .collect::<Vec<_>>()
            .join(" / ");
        println!(
            "{:<26} {:>14.1} {:>7.2}x {:>7.1}/{:<8.1} {:>9.2} ({:>4.2}x) {:>10} {:>12}  {}",
            row.name,
            row.submissions_per_sec,
            ratio,
            row.claim.p50 / 1e3,
            row.claim.p99 / 1e3,
            row.status.p99 / 1e3,
            status_ratio,
            takeover,
            lock_wait,
            if spread.is_empty() { "—" } else { &spread }
        );
    }
    if let Some(one) = rows.iter().find(|r| r.name == "PostgreSQL, 1 instance") {
        println!(
            "PostgreSQL x1 against SQLite: {:.2}x submissions/s",
            one.submissions_per_sec / base.submissions_per_sec
        );
        for row in rows.iter().filter(|r| r.spread.len() > 1) {
            println!(
                "{} against PostgreSQL x1: {:.2}x submissions/s",
                row.name,
                row.submissions_per_sec / one.submissions_per_sec
            );
        }
    }
    println!(
        "(takeover: kill -9 of the holder until another instance reports the task failed, with \
         heartbeats every {HEARTBEAT_MS} ms and leases expiring after {LEASE_EXPIRY_MS} ms)"
    );
}

/// A throw-away database on the given server.
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    async fn create(server: &str) -> Result<Self, BenchError> {
        let name = format!("handoff_bench_{}_{}", std::process::id(), rand_suffix());
        let mut conn = PgConnection::connect(server)
            .await
            .map_err(|e| BenchError::Setup(format!("--database-url: {e}")))?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .map_err(|e| BenchError::Setup(format!("creating a database: {e}")))?;
        let url = match server.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{name}"),
            None => return Err(BenchError::Setup("--database-url names no database".into())),
        };
        Ok(Self {
            admin: server.to_owned(),
            name,
            url,
        })
    }

    /// The pid of the instance holding task `id`'s lease, once it is claimed.
    async fn holder_pid(&self, id: &str) -> Result<u32, BenchError> {
        let mut conn = PgConnection::connect(&self.url)
            .await
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pid: Option<i64> = sqlx::query_scalar(
                "SELECT i.pid FROM tasks t JOIN instances i ON i.id = t.owner WHERE t.id = $1",
            )
            .bind(id)
            .fetch_optional(&mut conn)
            .await
            .map_err(|e| BenchError::Setup(e.to_string()))?;
            if let Some(pid) = pid.and_then(|p| u32::try_from(p).ok()) {
                return Ok(pid);
            }
            if Instant::now() > deadline {
                return Err(BenchError::Setup(format!("task {id} was not claimed")));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Each instance's share of the tasks run so far, largest first.
    async fn spread(&self) -> Result<Vec<f64>, BenchError> {
        let mut conn = PgConnection::connect(&self.url)
            .await
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        let counts: Vec<i64> = sqlx::query_scalar(
            "SELECT COUNT(*) FROM tasks WHERE ran_on IS NOT NULL GROUP BY ran_on \
             ORDER BY COUNT(*) DESC",
        )
        .fetch_all(&mut conn)
        .await
        .map_err(|e| BenchError::Setup(e.to_string()))?;
        let total = counts.iter().sum::<i64>().max(1) as f64;
        Ok(counts.into_iter().map(|n| n as f64 / total).collect())
    }

    async fn drop(self) {
        if let Ok(mut conn) = PgConnection::connect(&self.admin).await {
            let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
            let _ = sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await;
        }
    }
}

/// Eight hex digits from the clock, enough to keep two runs' databases apart.
fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{nanos:08x}")
}

/// Samples, while submissions run, how many of the database's sessions wait for a lock; the
/// samples summed over their interval are the time spent waiting.
struct LockSampler {
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<Duration>,
}

impl LockSampler {
    fn start(url: String) -> Self {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let done = tokio::spawn(async move {
            let Ok(mut conn) = PgConnection::connect(&url).await else {
                return Duration::ZERO;
            };
            let mut waiting = 0u64;
            loop {
                let sampled: Result<i64, _> = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .fetch_one(&mut conn)
                .await;
                waiting += sampled.map_or(0, |n| u64::try_from(n).unwrap_or(0));
                tokio::select! {
                    _ = &mut stopped => break,
                    () = tokio::time::sleep(LOCK_SAMPLE) => {}
                }
            }
            LOCK_SAMPLE * u32::try_from(waiting).unwrap_or(u32::MAX)
        });
        Self { stop, done }
    }

    /// The total time sessions spent waiting for locks while sampled.
    async fn stop(self) -> Duration {
        let _ = self.stop.send(());
        self.done.await.unwrap_or(Duration::ZERO)
    }
}
