package skills

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/asyncusage"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/llm"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// EmbedderFor returns the embedder skills.retrieval_mode embedding/hybrid
// uses: the OpenAI-compatible /embeddings of llm.api_base, with model
// skills.embedding_model_path when set, else memory.embedding_model. Nil in
// keyword mode or when no OpenAI-compatible endpoint is configured.
func EmbedderFor(cfg *config.Config, usage llm.UsageRecorder) embed.Embedder {
	if cfg.Skills.RetrievalMode == ModeKeyword || cfg.Skills.RetrievalMode == "" || cfg.LLM.APIBase == "" || cfg.LLM.API == "anthropic" {
		return nil
	}
	model := cfg.Memory.EmbeddingModel
	if cfg.Source("skills.embedding_model_path") != "default" {
		model = cfg.Skills.EmbeddingModelPath
	}
	h := &embed.HTTP{Base: cfg.LLM.APIBase, Key: cfg.LLM.APIKey, Model: model, Purpose: "embedder"}
	if usage != nil {
		h.Usage = usage
	}
	return h
}

// OpenLibrary opens the library of skills.dir on the store (CLI and daemon).
func OpenLibrary(ctx context.Context, cfg *config.Config, st store.Tables, emb embed.Embedder, log zerolog.Logger) (*Library, error) {
	return Open(ctx, Options{Dir: cfg.Skills.Dir, Store: st, Log: log, Embedder: emb})
}

// Host is the skills component as the daemon runs it.
type Host struct {
	Lib      *Library
	Provider *Provider
	Evolver  *Evolver // nil unless skills.auto_evolve
	Routes   []route.Route
	closers  []io.Closer
}

// Close stops the watcher and background work.
func (h *Host) Close() error {
	var errs []error
	for i := len(h.closers) - 1; i >= 0; i-- {
		errs = append(errs, h.closers[i].Close())
	}
	return errors.Join(errs...)
}

// AssembleOptions override parts of Assemble (tests).
type AssembleOptions struct {
	Embedder embed.Embedder
	LLM      Completer
	Watch    WatchOptions
	// EvolverTimeout bounds one evolution run; default 3 min.
	EvolverTimeout time.Duration
	// FirstStartBank, when set, is installed into a skills dir that never
	// had a bank decision (see BankNeverSetUp); the daemon passes the
	// built-in bank.
	FirstStartBank fs.FS
}

// Storage is what the skills host needs from the store: session
// transcripts and usage records (Store) and its own tables (Tables).
type Storage interface {
	store.Store
	store.Tables
}

// Assemble opens the library of cfg.Skills.Dir, watches it, registers the
// "skills" provider on the core and, with skills.auto_evolve, the evolver
// (at session end and every skills.evolution_every_n_turns main turns).
func Assemble(ctx context.Context, cfg *config.Config, st Storage, c *core.Core, log zerolog.Logger, o AssembleOptions) (*Host, error) {
	var closers []io.Closer
	emb := o.Embedder
	if emb == nil {
		// Queries are embedded on the request path: their usage is
		// recorded from a background goroutine, never written there.
		usage := asyncusage.New(st)
		closers = append(closers, usage)
		emb = EmbedderFor(cfg, usage)
	}
	mode := cfg.Skills.RetrievalMode
	if mode != ModeKeyword && emb == nil {
		log.Warn().Str("retrieval_mode", mode).Msg("skills: no OpenAI-compatible embeddings endpoint (llm.api_base with llm.api openai); ranking by keywords")
		mode = ModeKeyword
	}
	fresh := false
	if o.FirstStartBank != nil {
		var err error
		if fresh, err = BankNeverSetUp(cfg.Skills.Dir); err != nil {
			log.Warn().Err(err).Msg("skills: cannot tell whether the skill bank was set up; not installing it")
		}
	}
	lib, err := OpenLibrary(ctx, cfg, st, emb, log)
	if err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	if fresh {
		// A host started without `metaclaw setup` (make run, a service
		// unit) gets the same skills as one set up by the wizard.
		if res, err := InstallBank(ctx, lib, o.FirstStartBank); err != nil {
			log.Warn().Err(err).Msg("skills: installing the built-in skill bank failed; run metaclaw skills install-bank")
		} else {
			log.Info().Int("installed", len(res.Installed)).Str("dir", lib.Dir()).Msg("skills: first start, installed the built-in skill bank")
		}
	}
	h := &Host{Lib: lib, closers: append(closers, lib)}
	w, err := lib.Watch(o.Watch)
	if err != nil {
		log.Warn().Err(err).Msg("skills: cannot watch the skill folder; edits are picked up every few minutes")
	} else {
		h.closers = append(h.closers, w)
	}
	h.Provider = NewProvider(lib, ProviderOptions{TopK: cfg.Skills.TopK, MaxTokens: cfg.Skills.MaxTokens, Mode: mode, Embedder: emb, Log: log})
	c.AddProvider(h.Provider)
	RegisterTools(c, lib, h.Provider)
	if cfg.Skills.AutoEvolve {
		client := o.LLM
		if client == nil {
			lc := llm.New(cfg.EvolverEndpoint(), "evolver", st, 2*time.Minute)
			if lc.Configured() {
				client = lc
			}
		}
		if client == nil {
			log.Warn().Msg("skills: no evolver LLM configured (skills.evolver.* or llm.*); skills will not evolve")
		} else {
			h.Evolver = NewEvolver(EvolverOptions{
				Lib: lib, Store: st, DB: st.Writer(), LLM: client, Review: cfg.Skills.Review,
				MaxNewSkills: cfg.Skills.MaxNewSkills, EveryNTurns: cfg.Skills.EvolutionEveryNTurns,
				Timeout: o.EvolverTimeout, Log: log,
			})
			h.Evolver.Register(c)
		}
	}
	h.Routes = Routes(lib, h.Provider)
	problems := 0
	for _, p := range lib.Problems() {
		if p.Fatal {
			problems++
		}
	}
	log.Info().Str("dir", lib.Dir()).Int("skills", len(lib.List())).Int("active", lib.ActiveCount()).Int("skipped_files", problems).
		Str("retrieval", mode).Bool("evolve", h.Evolver != nil).Str("review", cfg.Skills.Review).Msg("skills ready")
	return h, nil
}
