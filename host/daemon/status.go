package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	rlruntime "github.com/metaclaw-go/metaclaw/host/rl/runtime"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/subplugin"
	"github.com/metaclaw-go/metaclaw/host/version"
)

// Status is the JSON of `GET /v1/status` and `metaclaw status --json`.
// Documented in docs/status.md; fields are only ever added.
type Status struct {
	OK            bool                        `json:"ok"`
	Running       bool                        `json:"running"`
	Version       string                      `json:"version"`
	Mode          string                      `json:"mode"`
	PID           int                         `json:"pid,omitempty"`
	StartedAt     *time.Time                  `json:"started_at,omitempty"`
	UptimeSeconds float64                     `json:"uptime_seconds"`
	Listen        string                      `json:"listen,omitempty"`
	Auth          bool                        `json:"auth_required"`
	Upstream      Upstream                    `json:"upstream"`
	Counts        Counts                      `json:"counts"`
	Jobs          Jobs                        `json:"jobs"`
	RL            RLState                     `json:"rl"`
	Scheduler     *scheduler.Status           `json:"scheduler,omitempty"`
	Training      *train.Status               `json:"training,omitempty"`
	Providers     []string                    `json:"context_providers"`
	LLMUsage      map[string]store.UsageTotal `json:"llm_usage"`
	Plugins       []subplugin.Status          `json:"plugins"`
	Warnings      []string                    `json:"warnings,omitempty"`
	Error         string                      `json:"error,omitempty"`
}

// Upstream describes where turns are forwarded.
type Upstream struct {
	Configured bool   `json:"configured"`
	API        string `json:"api"`
	BaseURL    string `json:"base_url,omitempty"`
	Model      string `json:"model,omitempty"`
	Source     string `json:"source,omitempty"` // config, secrets, env NAME
	// KeySource is where the upstream key came from: secrets, config, env
	// NAME (then only hosts started with NAME set have it), or empty: no key.
	KeySource string `json:"key_source,omitempty"`
}

// Counts are what the host has recorded and learned.
type Counts struct {
	Turns              int `json:"turns"`
	Sessions           int `json:"sessions"`
	OpenSessions       int `json:"open_sessions"`
	InjectedTokens     int `json:"injected_tokens"`
	Skills             int `json:"skills"`
	Memories           int `json:"memories"`
	PendingTurns       int `json:"pending_turns"`        // observed, not yet persisted
	MemoryPendingTurns int `json:"memory_pending_turns"` // persisted, not yet ingested into memory
	MemoriesRefused    int `json:"memories_refused"`     // candidates refused by the injection guard (metaclaw memory refused)
	// MemoryOldestPendingSeconds is how long the oldest of them has waited.
	MemoryOldestPendingSeconds int   `json:"memory_oldest_pending_seconds"`
	ObservedSinceStart         int64 `json:"observed_since_start"`
	// What the store refused since start (docs/store.md): turns waiting in
	// the spool, recorded as failed stubs, and lost.
	SpooledTurns        int64 `json:"spooled_turns"`
	TurnsNotStoredWhole int64 `json:"turns_not_stored_whole"`
	LostTurns           int64 `json:"lost_turns"`
}

// Jobs are the durable background queue.
type Jobs struct {
	Pending int `json:"pending"`
	Failed  int `json:"failed"`
}

// RLState is RL's state: serving from the policy model, samples, rewards
// (host/rl/runtime).
type RLState = rlruntime.Status

// BuildStatus gathers the running host's status.
func BuildStatus(ctx context.Context, cfg *config.Config, c *core.Core, info Info) Status {
	st := Status{
		OK: true, Running: true, Version: version.Version, Mode: cfg.Mode, PID: info.PID,
		Listen: info.Addr, Auth: proxyKey(cfg) != "", Upstream: upstreamOf(cfg), RL: rlState(cfg),
		Warnings: cfg.Warnings,
	}
	if !info.StartedAt.IsZero() {
		t := info.StartedAt
		st.StartedAt = &t
		st.UptimeSeconds = time.Since(t).Round(time.Millisecond).Seconds()
	}
	stats, err := c.Stats(ctx)
	if err != nil {
		st.OK = false
		st.Error = err.Error()
	}
	st.Counts = Counts{
		Turns: stats.Turns, Sessions: stats.Sessions, OpenSessions: stats.OpenSessions,
		InjectedTokens: stats.InjectedTokens, PendingTurns: stats.QueuedTurns, ObservedSinceStart: stats.ObservedSinceStart,
		Skills: stats.Learned["skills"], Memories: stats.Learned["memories"], MemoryPendingTurns: stats.Learned["memory_pending_turns"],
		MemoryOldestPendingSeconds: stats.Learned["memory_oldest_pending_seconds"],
		SpooledTurns:               stats.SpooledTurns, TurnsNotStoredWhole: stats.NotStoredWhole, LostTurns: stats.UnpersistedTurns,
		MemoriesRefused: stats.Learned["memories_refused"],
	}
	st.Plugins = subplugin.AllStatus()
	if st.Plugins == nil {
		st.Plugins = []subplugin.Status{}
	}
	st.LLMUsage = stats.Usage
	if st.LLMUsage == nil {
		st.LLMUsage = map[string]store.UsageTotal{}
	}
	st.Jobs = Jobs{Pending: stats.PendingJobs, Failed: stats.FailedJobs}
	st.Providers = stats.Providers
	if st.Providers == nil {
		st.Providers = []string{}
	}
	return st
}

func upstreamOf(cfg *config.Config) Upstream {
	u := Upstream{Configured: cfg.UpstreamConfigured(), API: cfg.LLM.API, BaseURL: cfg.LLM.APIBase, Model: cfg.LLM.ModelID}
	u.Source = cfg.UpstreamSource()
	u.KeySource = cfg.UpstreamKeySource()
	return u
}

func rlState(cfg *config.Config) RLState {
	if cfg.Mode == "skills_only" {
		return RLState{State: "off", Reason: "mode skills_only learns skills and memories only"}
	}
	return RLState{State: "inactive", Reason: fmt.Sprintf("mode %s: skills and memory run; RL training stays inactive until a trainer backend is configured (rl.backend, rl.api_key) and supported by this build", cfg.Mode)}
}

// FetchStatus asks a running host for its status.
func FetchStatus(ctx context.Context, info Info, apiKey string) (Status, error) {
	var st Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL()+"/v1/status", nil)
	if err != nil {
		return st, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("query status at %s: %w", info.Addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("query status at %s: HTTP %d (is proxy.api_key the key the host was started with?)", info.Addr, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("query status at %s: %w", info.Addr, err)
	}
	return st, nil
}
