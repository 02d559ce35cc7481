package config

// The structs below ARE the schema. Every exported field with a yaml tag is a
// config key; its other struct tags carry the metadata that Default, Load,
// Validate, Set, Keys and the env overrides all read, so a key is added or
// changed in exactly one place:
//
//	default:"…"  default value, in the same syntax `metaclaw config set` accepts;
//	             "$METACLAW_HOME/…" is replaced by the state dir
//	desc:"…"     one-line description (README / manifest.json)
//	enum:"a,b"   allowed values
//	alias:"x=a"  accepted spellings rewritten to a canonical value ("=none" maps empty)
//	min/max      inclusive numeric bounds; min:">0" means strictly positive
//	check:"…"    url | hhmm | path (`~` expanded, relative to $METACLAW_HOME) | host
//	derive:"…"   value used when empty, e.g. "{memory.dir}/memory.db"
//	sameas:"k"   Python-MetaClaw name for key k: read when k is not set, then kept equal
//	secret:"1"   stored in secrets.yaml and masked on display
//	status:"…"   compat = accepted for compatibility, not used yet;
//	             legacy = accepted and ignored, warns when set to a non-default value

// Config is the whole MetaClaw configuration.
type Config struct {
	Mode              string `yaml:"mode" default:"auto" enum:"auto,rl,skills_only" alias:"madmax=auto" desc:"Operating mode: skills_only injects skills/memories and learns them; rl and auto also run RL once a training backend is configured: the user's policy model on that backend answers main turns, every answer is stored as a sample, and, with a judge (rl.prm_*, plugins.judge) or an OPD teacher to score them, the LoRA trains on them, as soon as a batch is ready (rl) or only in idle/sleep windows (auto; the scheduler is forced on). Without a backend RL stays inactive and metaclaw status says why. Python's old name \"madmax\" is read as auto."`
	ClawType          string `yaml:"claw_type" default:"none" enum:"openclaw,copaw,ironclaw,picoclaw,zeroclaw,nanoclaw,nemoclaw,hermes,none" alias:"=none" desc:"Agent client that metaclaw wires to the proxy; none leaves client configs untouched."`
	ConfigureOpenClaw bool   `yaml:"configure_openclaw" default:"true" status:"legacy" desc:"Old Python switch (false meant claw_type none); use claw_type instead."`
	BedrockRegion     string `yaml:"bedrock_region" status:"legacy" desc:"Old top-level AWS Bedrock region; Bedrock is not supported."`

	LLM   LLM   `yaml:"llm"`
	Proxy Proxy `yaml:"proxy"`

	MaxContextTokens int `yaml:"max_context_tokens" default:"0" min:"0" desc:"Prompt token cap before MetaClaw truncates history; 0 = no truncation. Python defaults to 50000; we default to 0 because the client manages its own context window."`
	ContextWindow    int `yaml:"context_window" default:"0" min:"0" desc:"Context window advertised to the wired client (e.g. OpenClaw compaction threshold); 0 = auto."`

	Skills     Skills     `yaml:"skills"`
	Memory     Memory     `yaml:"memory"`
	RL         RL         `yaml:"rl"`
	OPD        OPD        `yaml:"opd"`
	Scheduler  Scheduler  `yaml:"scheduler"`
	WeChat     WeChat     `yaml:"wechat"`
	OpenRouter OpenRouter `yaml:"openrouter"`
	Log        Log        `yaml:"log"`
	Plugins    Plugins    `yaml:"plugins"`
	Store      Store      `yaml:"store"`
	Runtime    Runtime    `yaml:"runtime"`

	// Home is the state dir the config was loaded for ($METACLAW_HOME).
	Home string `yaml:"-"`
	// Warnings are non-fatal findings of Load (legacy keys, tightened file
	// modes, …) for the CLI/daemon to print or log once.
	Warnings []string `yaml:"-"`
	// Sources maps a key path to where its value came from: "config",
	// "secrets", "env NAME", or "derived". Keys left at their default are absent.
	Sources map[string]string `yaml:"-"`

	// loc maps a key path to a human location ("…/config.yaml:12",
	// "env METACLAW_X") so Validate can point at the offending line.
	loc map[string]location
	// fileSecrets lists the non-empty secret keys found in each file
	// ("config", "secrets"), to decide whether a file must be made private.
	fileSecrets map[string][]string
}

// LLM is the upstream model the proxy forwards to.
type LLM struct {
	Provider       string `yaml:"provider" default:"custom" desc:"Provider label (kimi, qwen, openai, openrouter, volcengine, custom, …); informational, the wire format is llm.api."`
	APIBase        string `yaml:"api_base" check:"url" desc:"Upstream base URL, e.g. https://api.openai.com/v1. Empty: taken from OPENAI_BASE_URL/OPENAI_API_KEY or ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY."`
	APIKey         string `yaml:"api_key" secret:"1" desc:"Upstream API key (stored in secrets.yaml). Empty: OPENAI_API_KEY or ANTHROPIC_API_KEY matching llm.api."`
	ModelID        string `yaml:"model_id" desc:"Model forwarded upstream and served to clients; empty = the model the client asked for."`
	API            string `yaml:"api" default:"openai" enum:"openai,anthropic" desc:"Upstream wire format: openai (/chat/completions) or anthropic (/v1/messages)."`
	AuthMethod     string `yaml:"auth_method" default:"api_key" enum:"api_key,oauth_token" status:"legacy" desc:"Python CLI-subprocess auth switch; only api_key is supported."`
	TimeoutSeconds int    `yaml:"timeout_seconds" default:"600" min:"1" desc:"Upstream request timeout in seconds."`
	BedrockRegion  string `yaml:"bedrock_region" status:"legacy" desc:"Old Python AWS Bedrock region; Bedrock is not supported."`
}

// Proxy is the local OpenAI/Anthropic-compatible listener.
type Proxy struct {
	Host         string `yaml:"host" default:"127.0.0.1" check:"host" desc:"Listen address. A non-loopback address requires proxy.api_key and proxy.auth key."`
	Port         int    `yaml:"port" default:"30000" min:"0" max:"65535" desc:"Listen port (0 = pick a free port, for tests)."`
	APIKey       string `yaml:"api_key" secret:"1" desc:"Bearer token (or x-api-key) clients must send to the proxy. Generated into secrets.yaml on first start when empty (proxy.auth key); metaclaw env prints it."`
	Auth         string `yaml:"auth" default:"key" enum:"key,none" desc:"key: every route but /healthz and /ui needs proxy.api_key, so other local users cannot read memories or spend your LLM credits; none: no key on a loopback listener (any local account can use the proxy; the client's own key is passed upstream when llm.api_key is empty)."`
	MaxBodyMB    int    `yaml:"max_body_mb" default:"32" min:"1" desc:"Largest accepted request body, in MiB."`
	MaxAnswerMB  int    `yaml:"max_answer_mb" default:"16" min:"1" desc:"Largest non-streaming answer held in memory to be parsed, translated and recorded, in MiB; a larger one is relayed as it arrives without being stored (or refused with 502 when it would need translation)."`
	TrustedLocal bool   `yaml:"trusted_local" default:"false" status:"legacy" desc:"Old Python proxy flag; ignored."`
}

// Skills configures skill retrieval, injection and evolution.
type Skills struct {
	Enabled              bool    `yaml:"enabled" default:"true" desc:"Inject skills into turns and learn new ones."`
	Dir                  string  `yaml:"dir" default:"$METACLAW_HOME/skills" check:"path" desc:"Skill library (SKILL.md files, the source of truth)."`
	RetrievalMode        string  `yaml:"retrieval_mode" default:"keyword" enum:"keyword,embedding,hybrid" alias:"template=keyword" desc:"How skills are ranked; Python's \"template\" is read as keyword."`
	TopK                 int     `yaml:"top_k" default:"6" min:"0" desc:"General skills injected per turn."`
	TaskSpecificTopK     int     `yaml:"task_specific_top_k" default:"10" min:"0" desc:"Cap on task-specific skills injected per turn."`
	MaxTokens            int     `yaml:"max_tokens" default:"1500" min:"0" desc:"Token budget of the injected skills block."`
	AutoEvolve           bool    `yaml:"auto_evolve" default:"true" desc:"Summarise sessions into new or improved skills."`
	EvolutionEveryNTurns int     `yaml:"evolution_every_n_turns" default:"10" min:"0" desc:"Run skill evolution every N main turns; 0 = only at session end."`
	Review               string  `yaml:"review" default:"auto" enum:"auto,manual" desc:"auto applies evolved skills; manual queues them for metaclaw skills review."`
	MaxNewSkills         int     `yaml:"max_new_skills" default:"3" min:"0" desc:"Most skills one evolution run may create."`
	SkillUpdateThreshold float64 `yaml:"skill_update_threshold" default:"0.4" min:"0" max:"1" status:"compat" desc:"Python: evolve after a training batch whose success rate is below this."`
	EmbeddingModelPath   string  `yaml:"embedding_model_path" default:"Qwen/Qwen3-Embedding-0.6B" status:"compat" desc:"Python: local sentence-embedding model for embedding retrieval."`
	Evolver              Evolver `yaml:"evolver"`
}

// Evolver is the LLM used to write skills; empty fields fall back to rl.evolver_* then llm.*.
type Evolver struct {
	APIBase string `yaml:"api_base" check:"url" desc:"Evolver base URL; empty = llm.api_base."`
	APIKey  string `yaml:"api_key" secret:"1" desc:"Evolver API key; empty = llm.api_key."`
	Model   string `yaml:"model" desc:"Evolver model; empty = llm.model_id."`
	API     string `yaml:"api" enum:"openai,anthropic" alias:"=" desc:"Evolver wire format; empty = llm.api."`
}

// Memory configures the memory layer (Python keys plus ours).
type Memory struct {
	Enabled                    bool    `yaml:"enabled" default:"true" desc:"Inject and learn memories (Python defaults to false)."`
	Dir                        string  `yaml:"dir" default:"$METACLAW_HOME/memory" check:"path" desc:"Memory data directory."`
	StorePath                  string  `yaml:"store_path" check:"path" derive:"{memory.dir}/memory.db" desc:"Python memory database path; empty = <memory.dir>/memory.db."`
	PolicyPath                 string  `yaml:"policy_path" check:"path" derive:"{memory.dir}/policy.json" status:"compat" desc:"Python retrieval-policy file; empty = <memory.dir>/policy.json."`
	TelemetryPath              string  `yaml:"telemetry_path" check:"path" derive:"{memory.dir}/telemetry.jsonl" status:"compat" desc:"Python telemetry log; empty = <memory.dir>/telemetry.jsonl."`
	Scope                      string  `yaml:"scope" default:"default" desc:"Default memory scope when a request names none."`
	RetrievalMode              string  `yaml:"retrieval_mode" default:"keyword" enum:"keyword,embedding,hybrid,auto" alias:"semantic=embedding" desc:"How memories are ranked."`
	UseEmbeddings              bool    `yaml:"use_embeddings" default:"false" desc:"Compute embeddings for memories (needed by embedding/hybrid retrieval)."`
	EmbeddingMode              string  `yaml:"embedding_mode" default:"hashing" enum:"hashing,semantic" status:"compat" desc:"Python embedder: hashing (feature hashing) or semantic (sentence-transformers)."`
	EmbeddingModel             string  `yaml:"embedding_model" default:"all-MiniLM-L6-v2" desc:"Embedding model name."`
	EmbeddingModelPath         string  `yaml:"embedding_model_path" default:"Qwen/Qwen3-Embedding-0.6B" status:"compat" desc:"Python local embedding model."`
	AutoUpgradeEnabled         bool    `yaml:"auto_upgrade_enabled" default:"false" status:"compat" desc:"Python background policy self-upgrade."`
	AutoUpgradeIntervalSeconds int     `yaml:"auto_upgrade_interval_seconds" default:"900" min:"1" status:"compat" desc:"Python self-upgrade interval."`
	AutoUpgradeRequireReview   bool    `yaml:"auto_upgrade_require_review" default:"true" status:"compat" desc:"Python: queue upgraded policies for review."`
	ReviewStaleAfterHours      int     `yaml:"review_stale_after_hours" default:"72" min:"0" status:"compat" desc:"Python: review-queue entries older than this are stale."`
	MaxInjectedUnits           int     `yaml:"max_injected_units" default:"6" min:"0" sameas:"memory.top_k" desc:"Python name of memory.top_k."`
	MaxInjectedTokens          int     `yaml:"max_injected_tokens" default:"800" min:"0" sameas:"memory.max_tokens" desc:"Python name of memory.max_tokens."`
	AutoExtract                bool    `yaml:"auto_extract" default:"true" desc:"Extract memories from turns automatically."`
	AutoConsolidate            bool    `yaml:"auto_consolidate" default:"true" desc:"Merge duplicates and decay stale memories automatically."`
	IgnoreTurnType             bool    `yaml:"ignore_turn_type" default:"false" desc:"Learn from side turns (heartbeat, cron) too."`
	ManualTrigger              bool    `yaml:"manual_trigger" default:"false" desc:"Ingest only when asked (metaclaw memory ingest), not at session end."`
	FlushEvery                 int     `yaml:"flush_every" default:"5" min:"1" sameas:"memory.ingest_every_turns" desc:"Python name of memory.ingest_every_turns."`
	ConsolidationInterval      int     `yaml:"consolidation_interval" default:"10" min:"0" status:"compat" desc:"Python README: consolidate every N sessions."`
	SynergyEnabled             bool    `yaml:"synergy_enabled" default:"true" status:"compat" desc:"Python: coordinated skill+memory injection."`
	SynergyTokenBudget         int     `yaml:"synergy_token_budget" default:"1200" min:"0" status:"compat" desc:"Python: combined skill+memory token cap."`
	SynergySkillRatio          float64 `yaml:"synergy_skill_ratio" default:"0.35" min:"0" max:"1" status:"compat" desc:"Python: skill share of the synergy budget."`
	SynergyDedupThreshold      float64 `yaml:"synergy_dedup_threshold" default:"0.5" min:"0" max:"1" status:"compat" desc:"Python: Jaccard overlap that drops a procedural memory."`
	TopK                       int     `yaml:"top_k" default:"6" min:"0" desc:"Facts, project state and events relevant to the turn injected per turn (standing rules are counted by memory.standing_top_k)."`
	StandingTopK               int     `yaml:"standing_top_k" default:"16" min:"0" desc:"Standing rules and preferences carried on every main turn, best first, within memory.max_tokens; 0 = none."`
	MaxTokens                  int     `yaml:"max_tokens" default:"800" min:"0" desc:"Token budget of the injected memory block."`
	IngestEveryTurns           int     `yaml:"ingest_every_turns" default:"5" min:"1" desc:"Extract memories every N main turns of a session."`
	SessionIdleMinutes         int     `yaml:"session_idle_minutes" default:"30" min:"1" desc:"A session idle this long is ended (flushed and summarised)."`
	SessionStartWaitMS         int     `yaml:"session_start_wait_ms" default:"150" min:"0" max:"5000" desc:"A new session's first turn waits this long for the agent's earlier pending turns to be ingested; the rest is ingested in the background."`
	Extractor                  string  `yaml:"extractor" default:"heuristic" enum:"heuristic,llm,hybrid" desc:"How memories are extracted from turns."`
	SidecarURL                 string  `yaml:"sidecar_url" check:"url" desc:"Delegate memory to an external sidecar at this URL; empty = built in."`
	SidecarAPIKey              string  `yaml:"sidecar_api_key" secret:"1" desc:"Key for memory.sidecar_url (the other host's proxy.api_key); empty = METACLAW_MEMORY_SIDECAR_KEY, else proxy.api_key."`
}

// RL configures RL sample collection and cloud LoRA training.
type RL struct {
	Enabled             bool    `yaml:"enabled" default:"false" desc:"Run RL (also on when mode is rl or auto): with a training backend configured, main turns are answered by the policy model and stored as samples, which train the LoRA once a judge or OPD teacher scores them (docs/rl.md)."`
	Backend             string  `yaml:"backend" default:"auto" enum:"auto,tinker,mint,weaver,plugin" desc:"Training backend: tinker and mint speak Tinker's JSON protocol, weaver its REST API, plugin a Trainer sub-plugin (plugins.trainer); auto picks weaver or mint from WEAVER_*/MINT_* env, an sk-mint- key or the base URL's host, else tinker."`
	Model               string  `yaml:"model" desc:"Base model to train a LoRA on; empty = llm.model_id."`
	APIKey              string  `yaml:"api_key" secret:"1" desc:"Training backend API key (Tinker: tml-…, sent as X-API-Key; MinT: sk-mint-…; Weaver: sk-…). Empty: TINKER_API_KEY, MINT_API_KEY or WEAVER_API_KEY by backend."`
	BaseURL             string  `yaml:"base_url" check:"url" desc:"Training backend URL; empty = the backend's env (TINKER_BASE_URL, MINT_BASE_URL, WEAVER_BASE_URL), else its public default."`
	SDKVersion          string  `yaml:"sdk_version" desc:"SDK version reported to a Tinker/MinT service (it gates protocol features on it); empty = 0.24.0 for tinker, 0.6.0 for mint."`
	TinkerAPIKey        string  `yaml:"tinker_api_key" secret:"1" sameas:"rl.api_key" desc:"Python name of rl.api_key."`
	TinkerBaseURL       string  `yaml:"tinker_base_url" check:"url" sameas:"rl.base_url" desc:"Python name of rl.base_url."`
	TinkerSamplingURL   string  `yaml:"tinker_sampling_url" status:"compat" desc:"Python: unused sampling endpoint."`
	RendererName        string  `yaml:"renderer_name" status:"compat" desc:"Python: chat-template renderer name (unused)."`
	PRMURL              string  `yaml:"prm_url" default:"https://api.openai.com/v1" check:"url" desc:"Reward judge (PRM) base URL, OpenAI-compatible."`
	PRMModel            string  `yaml:"prm_model" default:"gpt-5.2" desc:"Reward judge model."`
	PRMAPIKey           string  `yaml:"prm_api_key" secret:"1" desc:"Reward judge API key."`
	PRMProvider         string  `yaml:"prm_provider" default:"openai" enum:"openai,bedrock" status:"compat" desc:"Python: judge client (bedrock is not supported)."`
	PRMM                int     `yaml:"prm_m" default:"3" min:"1" desc:"Judge votes per turn (majority vote)."`
	PRMTemperature      float64 `yaml:"prm_temperature" default:"0.6" min:"0" max:"2" desc:"Judge sampling temperature."`
	PRMMaxNewTokens     int     `yaml:"prm_max_new_tokens" default:"1024" min:"1" desc:"Judge reply token cap."`
	LoRARank            int     `yaml:"lora_rank" default:"32" min:"1" desc:"LoRA rank; a power of two (Tinker refuses others)."`
	BatchSize           int     `yaml:"batch_size" default:"4" min:"1" desc:"Samples per training step."`
	LearningRate        float64 `yaml:"learning_rate" default:"0.0001" min:">0" desc:"Adam learning rate."`
	MaxSteps            int     `yaml:"max_steps" default:"1000" min:"0" desc:"Stop training after this many steps; 0 = no limit."`
	LossFn              string  `yaml:"loss_fn" default:"importance_sampling" enum:"importance_sampling,ppo,cispo,cross_entropy,truncated_importance_sampling" desc:"Training loss (Weaver has no ppo or cispo)."`
	Advantage           string  `yaml:"advantage" default:"grpo" enum:"grpo,batch,raw" desc:"How rewards become advantages: grpo normalises within groups of samples that share a prompt and the rest over the batch; batch normalises over the whole batch (the Python behaviour); raw uses the reward as is."`
	CheckpointEvery     int     `yaml:"checkpoint_every" default:"5" min:"0" desc:"Save a training checkpoint (weights and optimizer state) every N steps; a restart resumes from the last one and replays the steps since; 0 = never (a restart then replays every step on a fresh LoRA)."`
	StepTimeoutMinutes  int     `yaml:"step_timeout_minutes" default:"30" min:"1" desc:"A training step (or a replayed one) still unfinished after this long is abandoned: its outcome is unknown, so the trainer resumes from the last checkpoint and trains its batch again."`
	SaveWeightsTimeoutS float64 `yaml:"save_weights_timeout_s" default:"200" min:">0" status:"compat" desc:"Python: timeout for refreshing the sampling weights after a step; here the sampler weights are part of the step, bounded by rl.step_timeout_minutes."`
	ResumeFromCkpt      string  `yaml:"resume_from_ckpt" desc:"Training checkpoint to start from (weights and optimizer state) while MetaClaw has recorded none of its own, e.g. a tinker://…/weights/step_0003 from another machine (the step number is read from a step_N name); afterwards restarts resume from MetaClaw's last checkpoint (metaclaw rl resume rolls back)."`
	EvolverAPIBase      string  `yaml:"evolver_api_base" check:"url" sameas:"skills.evolver.api_base" desc:"Python name of skills.evolver.api_base."`
	EvolverAPIKey       string  `yaml:"evolver_api_key" secret:"1" sameas:"skills.evolver.api_key" desc:"Python name of skills.evolver.api_key."`
	EvolverModel        string  `yaml:"evolver_model" sameas:"skills.evolver.model" desc:"Python name of skills.evolver.model."`
	EvolverProvider     string  `yaml:"evolver_provider" default:"openai" enum:"openai,bedrock" status:"compat" desc:"Python: evolver client (bedrock is not supported)."`
	SampleMaxTokens     int     `yaml:"sample_max_tokens" default:"2048" min:"1" desc:"RL serving: the answer's token budget when the client gives no max_tokens (always capped by the policy model's context window)."`
	SampleTemperature   float64 `yaml:"sample_temperature" default:"0.7" min:"0" max:"2" desc:"RL serving: sampling temperature when the client gives none."`
	SampleTopP          float64 `yaml:"sample_top_p" default:"0.95" min:"0" max:"1" desc:"RL serving: nucleus sampling (top_p) when the client gives none; 0 or 1 = off."`
	SampleTopK          int     `yaml:"sample_top_k" default:"50" min:"0" desc:"RL serving: top-k sampling when the client gives none; 0 = off."`
	FallbackToLLM       bool    `yaml:"fallback_to_llm" default:"true" desc:"RL serving: when the policy model cannot answer a main turn (backend not connected yet or down, a prompt its chat template cannot render or its context cannot hold), llm.* answers it instead (not sampled, counted in status); false = the client gets the error."`
	TokenizerPath       string  `yaml:"tokenizer_path" check:"path" desc:"Directory with the policy model's tokenizer.json and tokenizer_config.json (its chat template), used to encode prompts and decode samples in Go; empty = the cache written by metaclaw rl fetch-tokenizer (~/.cache/metaclaw/tokenizers/qwen3)."`
	ManualTrainTrigger  bool    `yaml:"manual_train_trigger" default:"false" desc:"Train only when asked (metaclaw rl step), never automatically."`
}

// OPD configures on-policy distillation from a teacher model.
type OPD struct {
	Enabled       bool    `yaml:"enabled" default:"false" desc:"Add a teacher KL penalty to RL advantages."`
	TeacherURL    string  `yaml:"teacher_url" check:"url" desc:"Teacher base URL (OpenAI-compatible /v1/completions with echo+logprobs)."`
	TeacherModel  string  `yaml:"teacher_model" desc:"Teacher model; must share the student's tokenizer."`
	TeacherAPIKey string  `yaml:"teacher_api_key" secret:"1" desc:"Teacher API key."`
	KLPenaltyCoef float64 `yaml:"kl_penalty_coef" default:"1.0" min:"0" desc:"Weight of the reverse-KL penalty."`
}

// Scheduler gates training to windows when the user is away (host/scheduler).
type Scheduler struct {
	Enabled              bool     `yaml:"enabled" default:"false" desc:"In rl mode, train only in windows when the user is away (sleep hours, idle, calendar events) instead of at once; auto mode always does."`
	IdleThresholdMinutes int      `yaml:"idle_threshold_minutes" default:"30" min:"0" desc:"No keyboard/mouse input and no proxy traffic for this long opens a training window; 0 = no idle windows."`
	IdleSource           string   `yaml:"idle_source" default:"auto" enum:"auto,logind,x11,macos,windows,traffic" desc:"How input idleness is read: auto (logind on Linux, else the X11 screensaver extension when DISPLAY is set; HIDIdleTime on macOS; GetLastInputInfo on Windows), logind, x11, macos, windows, or traffic (proxy requests only). metaclaw status names the one in use."`
	SleepStart           string   `yaml:"sleep_start" default:"23:00" check:"hhmm" desc:"Start of the nightly window, HH:MM in scheduler.timezone."`
	SleepEnd             string   `yaml:"sleep_end" default:"07:00" check:"hhmm" desc:"End of the nightly window, HH:MM in scheduler.timezone (may be after midnight); equal to sleep_start = no nightly window."`
	Timezone             string   `yaml:"timezone" check:"tz" desc:"IANA time zone of sleep hours and all-day events, e.g. Europe/Berlin; empty = the system's."`
	MinWindowMinutes     int      `yaml:"min_window_minutes" default:"15" min:"0" desc:"A window known to end sooner than this (or than one training step, measured) is not started."`
	ReturnGraceMinutes   int      `yaml:"return_grace_minutes" default:"5" min:"0" desc:"After a request of the user no window opens until the proxy has been quiet this long (the user is back)."`
	Calendar             Calendar `yaml:"calendar"`
}

// Calendar is the scheduler's calendar integration: busy events are windows.
type Calendar struct {
	Enabled         bool   `yaml:"enabled" default:"false" desc:"Treat busy Google Calendar events (meetings) as training windows; log in with metaclaw scheduler calendar login."`
	CredentialsPath string `yaml:"credentials_path" check:"path" desc:"Google OAuth client secrets JSON (an OAuth client of type Desktop app from the Google Cloud console)."`
	TokenPath       string `yaml:"token_path" default:"$METACLAW_HOME/calendar_token.json" check:"path" desc:"The calendar OAuth token file (mode 0600) when no OS keyring is used; its absolute path also names the keyring item."`
	TokenStore      string `yaml:"token_store" default:"auto" enum:"auto,keyring,file" desc:"Where the calendar OAuth token is kept: auto (the OS keyring — Secret Service on Linux, Keychain on macOS, Credential Manager on Windows — when one answers, else token_path), keyring (only the keyring), file (only token_path)."`
	CalendarID      string `yaml:"calendar_id" default:"primary" desc:"Google calendar to read; a calendar shared as free/busy only is read with freeBusy."`
	APIBase         string `yaml:"api_base" default:"https://www.googleapis.com/calendar/v3" check:"url" desc:"Google Calendar API base URL."`
	ICSURL          string `yaml:"ics_url" secret:"1" desc:"A published iCalendar (ICS) URL (https:// or webcal://) whose busy events are windows, from any calendar; stored in secrets.yaml (it usually holds a private token)."`
	RefreshMinutes  int    `yaml:"refresh_minutes" default:"15" min:"1" desc:"How often calendars are fetched ahead (36 hours); window checks use the cached answer."`
}

// WeChat is the old Python WeChat bridge switch.
type WeChat struct {
	Enabled bool `yaml:"enabled" default:"false" status:"legacy" desc:"Python installed the openclaw-weixin plugin; not done by metaclaw."`
}

// OpenRouter is the old Python OpenRouter routing section.
type OpenRouter struct {
	AppName        string   `yaml:"app_name" default:"MetaClaw" status:"legacy" desc:"X-Title sent to OpenRouter."`
	AppURL         string   `yaml:"app_url" status:"legacy" desc:"HTTP-Referer sent to OpenRouter."`
	Route          string   `yaml:"route" default:"fallback" enum:"fallback,price,throughput,latency" status:"legacy" desc:"OpenRouter provider routing."`
	FallbackModels []string `yaml:"fallback_models" status:"legacy" desc:"OpenRouter fallback models (list or comma-separated string)."`
	DataPolicy     string   `yaml:"data_policy" enum:"allow,deny" alias:"=" status:"legacy" desc:"OpenRouter data collection policy."`
}

// Plugins configures out-of-process sub-plugins (hashicorp/go-plugin).
type Plugins struct {
	Dir                string `yaml:"dir" default:"$METACLAW_HOME/plugins" check:"path" desc:"Directory searched for sub-plugin executables named metaclaw-<kind>-<name>."`
	Embedder           string `yaml:"embedder" desc:"Embedder shared by skills and memory: empty = each uses its own default; hashing = the built-in hashing embedder; a name = <plugins.dir>/metaclaw-embedder-<name>; a path = that plugin executable."`
	Trainer            string `yaml:"trainer" desc:"Trainer sub-plugin used when rl.backend is plugin: a name = <plugins.dir>/metaclaw-trainer-<name>; a path = that plugin executable."`
	Judge              string `yaml:"judge" desc:"Judge (reward) sub-plugin that replaces the rl.prm_url judge: a name = <plugins.dir>/metaclaw-judge-<name>; a path = that plugin executable; empty = the rl.prm_* judge."`
	CallTimeoutSeconds int    `yaml:"call_timeout_seconds" default:"30" min:"1" desc:"Deadline of each call to a sub-plugin, seconds (trainer plugins get at least 15 minutes)."`
	MaxRestarts        int    `yaml:"max_restarts" default:"5" min:"0" desc:"Relaunches of a crashed sub-plugin allowed within 10 minutes before it is disabled; 0 = never relaunch."`
}

// Store configures what the database keeps.
type Store struct {
	RetainDays int `yaml:"retain_days" default:"30" min:"0" desc:"Delete recorded turns (with their request and answer bodies), finished jobs and per-call usage rows older than this many days; turns that learning has not used yet, turns of open sessions and of pending jobs are kept. 0 = keep everything."`
	MaxBodyKB  int `yaml:"max_body_kb" default:"1024" min:"16" desc:"Largest request or answer body stored per turn, in KiB; longer ones are stored shortened with a marker (JSON stays valid)."`
}

// Runtime tunes how the host's own work shares the CPUs.
type Runtime struct {
	BackgroundNice int `yaml:"background_nice" default:"10" min:"0" max:"19" desc:"Niceness added to the threads of background jobs (memory ingestion, skill evolution) and of the turn recorder's commits of journaled turns on Linux, so a request's threads get the CPUs first whenever both want one; 0 = run them at the host's own priority. Ignored on other systems."`
	GCPercent      int `yaml:"gc_percent" default:"200" desc:"Garbage collector pacing of the host process, as Go's GOGC: a collection starts when the heap has grown this many percent over what the last one left live. 200 collects half as often as Go's default 100, so fewer requests run beside a mark phase and the GC takes less CPU, for a heap up to 3x the live one instead of 2x (docs/performance.md). Above 0: the host never turns its collector off. GOGC or GOMEMLIMIT in the host's environment wins over it."`
}

// Log configures the daemon log.
type Log struct {
	Level      string `yaml:"level" default:"info" enum:"debug,info,warn,error" alias:"warning=warn" desc:"Log level."`
	MaxSizeMB  int    `yaml:"max_size_mb" default:"10" min:"1" desc:"Rotate the log file at this size, MiB."`
	MaxBackups int    `yaml:"max_backups" default:"5" min:"0" desc:"Rotated log files kept."`
}
