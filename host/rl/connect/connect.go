// Package connect opens the training backend the configuration names:
// Tinker or MinT (host/rl/backend/tinker), Weaver (host/rl/backend/weaver)
// or a Trainer sub-plugin (host/subplugin), resolving rl.backend "auto", the
// key and the base URL the way the Python MetaClaw did.
package connect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/tinker"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/weaver"
	"github.com/metaclaw-go/metaclaw/host/subplugin"
)

// Backend kinds.
const (
	Tinker = "tinker"
	MinT   = "mint"
	Weaver = "weaver"
	Plugin = "plugin"
)

// envNames are each backend's key and URL variables.
var envNames = map[string][2]string{
	Tinker: {"TINKER_API_KEY", "TINKER_BASE_URL"},
	MinT:   {"MINT_API_KEY", "MINT_BASE_URL"},
	Weaver: {"WEAVER_API_KEY", "WEAVER_BASE_URL"},
}

// Detect resolves rl.backend: an explicit kind is kept; "auto" (or "")
// picks weaver when WEAVER_* is set or the URL's host contains "weaver",
// mint when MINT_* is set, the key starts with sk-mint- or the host contains
// "mint", and tinker otherwise.
func Detect(kind, apiKey, baseURL string, getenv func(string) string) string {
	if kind != "" && kind != "auto" {
		return kind
	}
	host := ""
	if u, err := url.Parse(baseURL); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	has := func(k string) bool { return getenv(envNames[k][0]) != "" || getenv(envNames[k][1]) != "" }
	switch {
	case has(Weaver) || strings.Contains(host, "weaver"):
		return Weaver
	case has(MinT) || strings.HasPrefix(apiKey, "sk-mint-") || strings.Contains(host, "mint"):
		return MinT
	}
	return Tinker
}

// Resolved is the backend a configuration names, with its secrets.
type Resolved struct {
	Kind    string
	BaseURL string // "" = the backend's public default
	APIKey  string
}

// Resolve applies the fallbacks: rl.api_key and rl.base_url, then the
// backend's own variables, then TINKER_* (as the Python launcher copied
// them into every family).
func Resolve(rl config.RL, getenv func(string) string) Resolved {
	kind := Detect(rl.Backend, rl.APIKey, rl.BaseURL, getenv)
	r := Resolved{Kind: kind, BaseURL: rl.BaseURL, APIKey: rl.APIKey}
	if names, ok := envNames[kind]; ok {
		if r.APIKey == "" {
			r.APIKey = first(getenv(names[0]), getenv("TINKER_API_KEY"))
		}
		if r.BaseURL == "" {
			r.BaseURL = first(getenv(names[1]), getenv("TINKER_BASE_URL"))
		}
	}
	return r
}

// Configured reports whether cfg names a training backend RL would connect
// to (a key for Tinker/MinT/Weaver, or a Trainer sub-plugin): in modes rl and
// auto such a backend answers main turns.
func Configured(cfg *config.Config, getenv func(string) string) bool {
	r := Resolve(cfg.RL, getenv)
	if r.Kind == Plugin {
		return strings.TrimSpace(cfg.Plugins.Trainer) != ""
	}
	return r.APIKey != ""
}

func first(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// ModelConfig is the LoRA the configuration asks for: rl.model (else
// llm.model_id) at rank rl.lora_rank on every part of the model.
func ModelConfig(cfg *config.Config) backend.ModelConfig {
	base := cfg.RL.Model
	if base == "" {
		base = cfg.LLM.ModelID
	}
	return backend.ModelConfig{BaseModel: base, LoRA: backend.DefaultLoRA(cfg.RL.LoRARank), Metadata: map[string]string{"client": "metaclaw-go"}}
}

// Adam is the optimizer step the configuration asks for.
func Adam(cfg *config.Config) backend.AdamParams { return backend.DefaultAdam(cfg.RL.LearningRate) }

// Options tune Open; the zero value reads the process environment.
type Options struct {
	Getenv func(string) string
	Logger zerolog.Logger
	// Tinker and Weaver override client options (tests: fast retries).
	Tinker tinker.Options
	Weaver weaver.Options
}

// Open connects to the configured backend. Close the result when done (for
// a plugin this also stops the plugin process).
func Open(ctx context.Context, cfg *config.Config, o Options) (backend.Backend, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	r := Resolve(cfg.RL, getenv)
	switch r.Kind {
	case Tinker, MinT:
		if r.APIKey == "" {
			return nil, fmt.Errorf("rl.backend %s: no API key. Fix: `metaclaw config set rl.api_key <key>` or set %s", r.Kind, envNames[r.Kind][0])
		}
		to := o.Tinker
		to.Flavor, to.BaseURL, to.APIKey, to.Logger = tinker.Flavor(r.Kind), r.BaseURL, r.APIKey, o.Logger
		if cfg.RL.SDKVersion != "" {
			to.SDKVersion = cfg.RL.SDKVersion
		}
		return tinker.Connect(ctx, to)
	case Weaver:
		if r.APIKey == "" {
			return nil, errors.New("rl.backend weaver: no API key. Fix: `metaclaw config set rl.api_key <key>` or set WEAVER_API_KEY")
		}
		wo := o.Weaver
		wo.BaseURL, wo.APIKey, wo.Logger = r.BaseURL, r.APIKey, o.Logger
		return weaver.Connect(ctx, wo)
	case Plugin:
		timeout := time.Duration(cfg.Plugins.CallTimeoutSeconds) * time.Second
		if timeout < subplugin.DefaultTrainerCallTimeout {
			timeout = subplugin.DefaultTrainerCallTimeout
		}
		restarts := cfg.Plugins.MaxRestarts
		if restarts == 0 {
			restarts = -1
		}
		b, closer, err := subplugin.OpenTrainer(ctx, subplugin.TrainerSpec{Use: cfg.Plugins.Trainer,
			Options: subplugin.Options{Dir: cfg.Plugins.Dir, CallTimeout: timeout, MaxRestarts: restarts}}, o.Logger)
		if err != nil {
			return nil, fmt.Errorf("plugins.trainer %q: %w", cfg.Plugins.Trainer, err)
		}
		return closing{b, closer}, nil
	}
	return nil, fmt.Errorf("rl.backend %q is not a training backend (tinker, mint, weaver, plugin)", r.Kind)
}

// closing closes a plugin backend together with its host.
type closing struct {
	backend.Backend
	host io.Closer
}

func (c closing) Close() error {
	err := c.Backend.Close()
	return errors.Join(err, c.host.Close())
}
