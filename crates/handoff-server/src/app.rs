//! The composition root: the store, the executors, the engine, which tools exist and which
//! pipeline stages they pass through.

use std::sync::{Arc, Mutex};

use handoff_config::Config;
use handoff_engine::{Engine, EngineError, EngineMetrics};
use handoff_policy::{hooks::HookRunner, output::SpillDir};
use handoff_runner::{AcpExecutor, Executor as _, ExecutorRegistry, OpenCodeExecutor, RunnerError};
use handoff_store::StoreError;
use handoff_tools::{
    Pipeline, RegistryError, ToolRegistry,
    builtin::{HealthTool, PingTool, ReadToolOutputTool, ServiceStatus},
    handles::TaskHandles,
    stages::{
        CallLoopGuard, CommandHooks, RulePermissions, SpillLimiter, StoreAudit,
        SubmissionRateForFailures,
    },
    tasks,
};
use prometheus_client::registry::Registry;

use crate::{
    http::{LettaMetrics, MatrixMetrics, McpMetrics, PoolMetrics},
    mcp::{ElicitationRelay, HandoffMcp},
};

/// Why an instance could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The database could not be opened.
    #[error("opening the task store at {path}: {source}")]
    Store {
        /// Database file, or PostgreSQL's host:port/database.
        path: String,
        /// The cause.
        source: StoreError,
    },
    /// An executor's settings are unusable.
    #[error("configuring executors: {0}")]
    Executor(#[from] RunnerError),
    /// The engine could not start (recovery failed).
    #[error("starting the task engine: {0}")]
    Engine(#[from] EngineError),
    /// Two tools share a name.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The host's isolation could not be probed.
    #[error("probing isolation: {0}")]
    Isolation(String),
}

/// One Handoff instance's shared state, served over any transport.
#[derive(Clone)]
pub struct App {
    /// The resolved configuration.
    pub config: Arc<Config>,
    /// Live health state.
    pub status: Arc<ServiceStatus>,
    /// The tool pipeline every call goes through.
    pub pipeline: Pipeline,
    /// The task engine.
    pub engine: Engine,
    /// Tasks as MCP Tasks handles.
    pub handles: TaskHandles,
    /// Every Prometheus metric of this instance.
    pub metrics: Arc<Mutex<Registry>>,
    /// MCP request counters.
    pub(crate) mcp_metrics: McpMetrics,
    /// The Letta integration's metrics and the integration whose backlog they show, when on.
    pub(crate) letta_metrics: Option<(LettaMetrics, handoff_letta::WorkspaceSync)>,
    /// The Matrix integration's metrics and the bridge whose open rooms they count, when on.
    pub(crate) matrix_metrics: Option<(MatrixMetrics, handoff_matrix::MatrixBridge)>,
    /// The OpenCode executor, whose managed server is stopped with the instance.
    opencode: Option<Arc<OpenCodeExecutor>>,
    /// The ACP executors, whose waiting agents are stopped with the instance.
    acp: Vec<Arc<AcpExecutor>>,
    /// Their pools' gauges.
    pub(crate) pool_metrics: PoolMetrics,
    /// Whether the pools were started ([`App::start_pools`]).
    pools_started: Arc<std::sync::atomic::AtomicBool>,
}

impl App {
    /// Opens the store, reconciles tasks left by a previous run, starts the engine and
    /// registers the tools. A process serving for good holds the data dir's
    /// [`crate::DataDirLock`] first: the reconciling takes over every task the store says is
    /// running.
    pub async fn start(config: Config) -> Result<Self, AppError> {
        let config = Arc::new(config);
        // Probing runs bubblewrap and docker once each (tens of ms): it overlaps opening and
        // migrating the store instead of following it.
        let isolator = {
            let config = config.clone();
            tokio::task::spawn_blocking(move || crate::isolation::isolator(&config))
        };
        let status = ServiceStatus::new();
        let mut metrics = Registry::default();
        let mcp_metrics = McpMetrics::register(&mut metrics);
        let engine_metrics = EngineMetrics::register(&mut metrics);

        let store = crate::store::OpenStore::open(&config)
            .await
            .map_err(|(path, source)| AppError::Store { path, source })?;
        let store_ok = store.describe(&config);
        status.set_component("store", true, store_ok.as_str());
        let store_faults = store.write_faults();
        let prober = store.clone();

        let isolator = isolator
            .await
            .map_err(|e| AppError::Isolation(e.to_string()))?;
        let (isolation_ok, isolation_summary) = crate::isolation::summary(&config, &isolator);
        status.set_component("isolation", isolation_ok, isolation_summary);
        if crate::isolation::needs_docker(&config, &isolator) {
            tokio::spawn(answer_docker(
                config.clone(),
                isolator.clone(),
                status.clone(),
            ));
        }
        let started = start_executors(&config, &isolator, &status).await?;
        let (executors, opencode, acp) = (started.registry, started.opencode, started.acp);
        let pool_metrics = PoolMetrics::register(&mut metrics, acp.clone());
        let engine = Engine::new(config.clone(), store.tasks(), executors, engine_metrics)?;
        if store.tasks().is_shared() {
            start_run_fence(&engine);
        }
        let crate::integrations::Started {
            integrations,
            follow_ups,
            matrix_bridge,
            letta_metrics,
            matrix_metrics,
        } = crate::integrations::start(&config, &engine, &store, &mut metrics, &status)?;
        engine.run(integrations).await?;

        let spill = SpillDir::under(&config.data_dir);
        let pipeline = build_pipeline(&config, &engine, &status, &spill, follow_ups)?;
        if let Some(bridge) = &matrix_bridge {
            // Commands from the rooms are tool calls: they start once the pipeline exists.
            bridge.steer_with(Arc::new(crate::integrations::PipelineSteering::new(
                pipeline.clone(),
            )));
            status.set_component(
                "matrix",
                true,
                format!(
                    "rooms on {}; a homeserver that does not answer is retried",
                    config.matrix.homeserver_url.as_deref().unwrap_or_default()
                ),
            );
        }
        tokio::spawn(clean_spilled_outputs(spill, config.tools.spill_retention));
        let handles = TaskHandles::new(
            engine.clone(),
            config.tasks.poll_interval,
            config.tasks.retention,
        );
        let app = Self {
            config,
            status,
            pipeline,
            engine,
            handles,
            metrics: Arc::new(Mutex::new(metrics)),
            mcp_metrics,
            letta_metrics,
            matrix_metrics,
            opencode,
            acp,
            pool_metrics,
            pools_started: Arc::default(),
        };
        // With a gateway, pooled agents start once it listens (`serve_http`): each is given
        // its URL.
        if !app.config.models.gateway_on() {
            app.start_pools();
        }
        tokio::spawn(refresh_counts(app.clone()));
        watch_store(&app, prober, store_faults, store_ok);
        Ok(app)
    }

    /// The MCP handler of one transport; `default_agent` is the identity where no header
    /// names one (stdio).
    pub(crate) fn mcp_handler(
        &self,
        default_agent: Option<handoff_tools::AgentId>,
        shutdown: &tokio_util::sync::CancellationToken,
    ) -> HandoffMcp {
        let relay = ElicitationRelay::start(
            self.handles.clone(),
            self.config.executors.ask_timeout,
            shutdown.child_token(),
        );
        HandoffMcp::new(
            self.pipeline.clone(),
            self.handles.clone(),
            relay,
            default_agent,
            self.config.server.default_agent.clone(),
        )
    }

    /// Starts the ACP executors' pools, once: at build without a gateway, else when the
    /// gateway listens (or, with stdio, never will), so that their agents get its URL.
    pub(crate) fn start_pools(&self) {
        if self
            .pools_started
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        for executor in &self.acp {
            executor.start_pool(self.engine.agent_env(executor.name()));
        }
    }

    /// Stops the engine (runs end or re-queue) and then the executors' own servers.
    pub async fn shutdown(&self) {
        self.engine.shutdown().await;
        for executor in &self.acp {
            executor.stop_pool();
        }
        if let Some(opencode) = &self.opencode {
            opencode.shutdown().await;
        }
    }

    /// Refreshes the task counts and instances shown by `health`, and the metrics.
    pub async fn refresh_task_counts(&self) {
        match self.engine.counts().await {
            Ok(counts) => {
                let count = |pred: fn(handoff_task::TaskStatus) -> bool| {
                    counts
                        .iter()
                        .filter(|(s, _)| pred(*s))
                        .map(|(_, n)| n)
                        .sum()
                };
                self.status.set_tasks(handoff_tools::builtin::TaskCounts {
                    active: count(handoff_task::TaskStatus::is_active),
                    queued: count(|s| s == handoff_task::TaskStatus::Queued),
                });
            }
            Err(e) => tracing::warn!(error = %e, "could not count tasks"),
        }
        match self.engine.instances().await {
            Ok(all) => self.status.set_instances(
                all.into_iter()
                    .map(|s| handoff_tools::builtin::InstanceReport {
                        this: *s.instance.id == *self.engine.instance_id(),
                        id: s.instance.id,
                        started_at_ms: s.instance.started,
                        heartbeat_ms: s.instance.heartbeat,
                        draining: s.instance.draining,
                        tasks_held: s.tasks_held,
                    })
                    .collect(),
            ),
            Err(e) => tracing::warn!(error = %e, "could not list the instances"),
        }
    }
}

/// Keeps the task counts in `health` current until the engine stops.
async fn refresh_counts(app: App) {
    loop {
        app.refresh_task_counts().await;
        tokio::select! {
            () = tokio::time::sleep(COUNTS_EVERY) => {}
            () = app.engine.stopped() => return,
        }
    }
}

/// How stale the task counts in `health` may be.
const COUNTS_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Removes spilled tool outputs past retention, at start-up and hourly.
async fn clean_spilled_outputs(spill: SpillDir, retention: std::time::Duration) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
    loop {
        tick.tick().await;
        let dir = spill.clone();
        let removed = tokio::task::spawn_blocking(move || {
            dir.cleanup(std::time::SystemTime::now(), retention)
        })
        .await;
        match removed {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => {
                tracing::info!(removed = n, "spilled tool outputs past retention removed")
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "cleaning spilled tool outputs failed"),
            Err(e) => tracing::warn!(error = %e, "cleaning spilled tool outputs panicked"),
        }
    }
}

/// The `executors` component of `/health` and `/ready`. Without its default executor the server
/// cannot take the tasks it exists for: not ready. It still serves every other tool, and
/// execute_task says what the operator must set up.
fn report_executors(
    config: &Config,
    executors: &ExecutorRegistry,
    notes: &[String],
    status: &ServiceStatus,
) {
    let names = executors.names();
    let default = &config.tasks.default_executor;
    let default_ready = executors.get(default).is_some();
    let mut summary = if names.is_empty() {
        "no executor available (install opencode, or set executors.command.argv / HANDOFF_COMMAND_ARGV)".to_owned()
    } else {
        format!("available: {}", names.join(", "))
    };
    for note in notes {
        summary.push_str("; ");
        summary.push_str(note);
    }
    if !default_ready {
        summary = format!("the default executor `{default}` is not available; {summary}");
        // The operator reads the log at start, long before a refused task would tell them.
        tracing::warn!(
            executor = %default,
            "the default executor is not available: tasks that name no executor are refused \
             until it is set up (`handoff doctor` says what is missing)"
        );
    }
    // OpenCode without a model falls back to a hosted one and fails only after minutes of
    // retries: say so now, where the operator looks.
    let model = crate::doctor::task_model(config);
    if default_ready && !model.ok {
        tracing::warn!(
            problem = %model.detail,
            fix = model.fix.as_deref().unwrap_or(""),
            "tasks may not reach a model"
        );
        summary.push_str("; ");
        summary.push_str(&model.detail);
    }
    status.set_component("executors", default_ready, summary);
    // The dashboard's new-task form offers these.
    status.set_executors(default.clone(), names);
}

/// Follows the store's liveness and write health into the `store` component until the engine
/// stops: a failed liveness probe or write marks it, an answered probe (and, after failed
/// writes, a probe write that succeeds) clears it.
fn watch_store(
    app: &App,
    store: crate::store::OpenStore,
    faults: tokio::sync::watch::Receiver<Option<String>>,
    described: String,
) {
    let engine = app.engine.clone();
    tokio::spawn(crate::store_health::follow(
        faults,
        store,
        app.status.clone(),
        described,
        crate::store_health::Cadence::SERVER,
        async move { engine.stopped().await },
    ));
}

/// Builds the executors, reports them, stops a managed OpenCode server a killed Handoff left
/// behind and, when tasks default to OpenCode, warms its server up in the background (the ACP
/// executors' pools start with [`App::start_pools`]).
async fn start_executors(
    config: &Arc<Config>,
    isolator: &Arc<handoff_isolation::Isolator>,
    status: &Arc<ServiceStatus>,
) -> Result<crate::executors::Executors, AppError> {
    let built = crate::executors::build(config, isolator)?;
    let crate::executors::Executors {
        registry: executors,
        opencode,
        notes,
        ..
    } = &built;
    report_executors(config, executors, notes, status);
    if let Some(opencode) = &opencode {
        // Whichever executor tasks default to: a server a killed Handoff left behind must
        // not wait for the first OpenCode task to be stopped.
        opencode.stop_leftover().await;
    }
    if let Some(opencode) = &opencode
        && config.tasks.default_executor == handoff_runner::OPENCODE
    {
        // Start the server now so the first task does not wait for it.
        let opencode = opencode.clone();
        let status = status.clone();
        tokio::spawn(async move {
            match opencode.warm_up().await {
                Ok(url) => status.set_component("opencode", true, format!("server at {url}")),
                Err(e) => status.set_component("opencode", false, e.to_string()),
            }
        });
    }
    Ok(built)
}

/// Probes Docker off the start-up path (a slow daemon takes up to the probe's limit); until it
/// answers, the container level is unavailable and, where an executor uses it, `/ready` says
/// the isolation is not ready. While no engine answers it is asked again every
/// `runner.docker_retry_secs`.
async fn answer_docker(
    config: Arc<Config>,
    isolator: Arc<handoff_isolation::Isolator>,
    status: Arc<ServiceStatus>,
) {
    loop {
        let probing = {
            let (docker, isolator) = (crate::isolation::docker_client(&config), isolator.clone());
            tokio::task::spawn_blocking(move || isolator.host().docker.run(&docker))
        };
        if let Err(e) = probing.await {
            isolator
                .host()
                .docker
                .answer(Err(format!("the Docker probe failed: {e}")));
        }
        let (ok, summary) = crate::isolation::summary(&config, &isolator);
        status.set_component("isolation", ok, summary);
        // A daemon started after Handoff is found by asking again while none answers.
        let Some(retry) = config.runner.docker_retry else {
            return;
        };
        if isolator.host().docker.version().is_ok() {
            return;
        }
        tokio::time::sleep(retry).await;
    }
}

/// The tools this instance offers and the pipeline stages every call passes through.
fn build_pipeline(
    config: &Config,
    engine: &Engine,
    status: &Arc<ServiceStatus>,
    spill: &SpillDir,
    follow_ups: Option<Arc<dyn handoff_tools::FollowUps>>,
) -> Result<Pipeline, AppError> {
    let mut registry = ToolRegistry::new();
    registry
        .register(PingTool)?
        .register(HealthTool::new(status.clone()))?
        .register(ReadToolOutputTool::new(spill.clone()))?;
    tasks::register(
        &mut registry,
        engine,
        config.tasks.sync_wait,
        config.features.async_execute,
        tasks::RepeatedSubmissions::new(config.tools.loop_guard, config.tools.loop_guard_window),
    )?;
    let read_only: Vec<&'static str> = registry
        .definitions()
        .filter(|d| d.annotations.read_only)
        .map(|d| d.name)
        .collect();
    let mut pipeline = Pipeline::builder(registry);
    if let Some(follow_ups) = follow_ups {
        pipeline = pipeline.follow_ups(follow_ups);
    }
    let pipeline = pipeline
        .permissions(Arc::new(RulePermissions::new(
            &config.tools.permissions.rules,
        )))
        .loop_guard(Arc::new(
            CallLoopGuard::new(config.tools.loop_guard, config.tools.loop_guard_window)
                .shared_through(engine)
                .except(tasks::JUDGE_OWN_REPEATS),
        ))
        .hooks(Arc::new(CommandHooks::new(
            HookRunner::new(config.hooks.clone()),
            config.data_dir.clone(),
        )))
        .output_limiter(Arc::new(SpillLimiter::new(
            spill.clone(),
            config.tools.clone(),
        )))
        .audit(Arc::new(StoreAudit::new(engine.clone(), read_only)))
        .failure_rate(Arc::new(SubmissionRateForFailures::new(engine.clone())))
        .build();
    Ok(pipeline)
}

/// Starts the run keeper that freezes this instance's runs from outside when the server itself
/// is stopped past its leases (a shared store only). Without it the runs are still frozen from
/// inside while the server runs; a stopped server's runs are not.
fn start_run_fence(engine: &Engine) {
    let Some(launcher) = crate::isolation::launcher() else {
        tracing::error!("no isolation launcher: runs are not fenced while this server is stopped");
        return;
    };
    match handoff_runner::fence::RunFence::spawn(&launcher) {
        Ok(fence) => engine.use_run_fence(fence),
        Err(e) => tracing::error!(
            error = %e,
            "could not start the run keeper: runs are not fenced while this server is stopped"
        ),
    }
}
