package plugin

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/onoff"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
)

// Relay carries normalised calls to the host with deadlines and the
// fail-open policy: context → empty block on any failure; observe/end
// events → delivered, else spooled and replayed later.
type Relay struct {
	Host  *Host
	Spool *Spool
	Log   zerolog.Logger
	// ContextTimeout bounds `context` (default 1500ms): the client's turn
	// waits at most this long for MetaClaw.
	ContextTimeout time.Duration
	// CallTimeout bounds other calls (default 3s).
	CallTimeout time.Duration
	Client      string
	// PassThrough reports `metaclaw disable`: every call is answered with
	// nothing at once, the host is neither asked nor started, and nothing
	// is recorded or spooled.
	PassThrough func() bool

	replaying atomic.Bool
	wg        sync.WaitGroup
	cancelMu  sync.Mutex
	cancels   []context.CancelFunc
}

// NewRelay links a relay to the host of a state dir. autoStart starts the
// host when needed; detach makes that start fire-and-forget (one-shot hooks).
func NewRelay(home, client string, autoStart, detach bool, log zerolog.Logger) *Relay {
	r := &Relay{Spool: NewSpool(SpoolDir(home), 0, 0), Log: log, Client: client, PassThrough: onoff.NewWatcher(home, 0).Disabled}
	r.Host = NewHost(HostOptions{Home: home, AutoStart: autoStart, Detach: detach, Log: log, OnConnect: func() {
		if !detach {
			r.ReplayAsync()
		}
	}})
	return r
}

func (r *Relay) contextTimeout() time.Duration {
	if r.ContextTimeout > 0 {
		return r.ContextTimeout
	}
	return 1500 * time.Millisecond
}

func (r *Relay) callTimeout() time.Duration {
	if r.CallTimeout > 0 {
		return r.CallTimeout
	}
	return 3 * time.Second
}

// Context asks the host for the block, failing open within the deadline.
func (r *Relay) Context(ctx context.Context, p protocol.ContextParams) protocol.ContextResult {
	if p.Client == "" {
		p.Client = r.Client
	}
	if r.off() {
		return protocol.ContextResult{IDs: []string{}, Agent: p.Agent, Session: p.Session, Skipped: SkippedDisabled}
	}
	ctx, cancel := context.WithTimeout(ctx, r.contextTimeout())
	defer cancel()
	var res protocol.ContextResult
	if err := r.Host.Call(ctx, protocol.MethodContext, p, &res); err != nil {
		r.Log.Debug().Err(err).Msg("context: proceeding without injection")
		return protocol.ContextResult{IDs: []string{}, Agent: p.Agent, Session: p.Session, Skipped: skipReason(err)}
	}
	if res.IDs == nil {
		res.IDs = []string{}
	}
	return res
}

func skipReason(err error) string {
	if IsUnavailable(err) {
		return "host unavailable"
	}
	return "error: " + err.Error()
}

// Call relays a call that is pointless to replay later (tools, status,
// trace registration), within the call deadline.
func (r *Relay) Call(ctx context.Context, method string, params, result any) error {
	if r.off() {
		return ErrDisabled
	}
	ctx, cancel := context.WithTimeout(ctx, r.callTimeout())
	defer cancel()
	return r.Host.Call(ctx, method, params, result)
}

// Delivery says what became of an event.
type Delivery struct {
	Delivered bool            `json:"delivered"`
	Spooled   bool            `json:"spooled,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Deliver sends an observe/end event; when the host cannot take it now the
// event stays in the spool for replay. The host's refusal of a malformed
// event is returned as an error (and not spooled).
func (r *Relay) Deliver(ctx context.Context, method string, params any) (Delivery, error) {
	if r.off() {
		return Delivery{Error: SkippedDisabled}, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return Delivery{}, err
	}
	claim, cerr := r.Spool.Claim(Entry{Method: method, Params: raw, At: time.Now(), Client: r.Client})
	if cerr != nil {
		r.Log.Warn().Err(cerr).Msg("spool unavailable; delivering without a safety copy")
	}
	ctx, cancel := context.WithTimeout(ctx, r.callTimeout())
	defer cancel()
	var result json.RawMessage
	err = r.Host.Call(ctx, method, json.RawMessage(raw), &result)
	switch {
	case err == nil:
		if claim != nil {
			claim.Done()
		}
		return Delivery{Delivered: true, Result: result}, nil
	case transient(err):
		if claim != nil {
			claim.Release()
			r.Log.Info().Str("method", method).Msg("host unavailable; event spooled for later")
			return Delivery{Spooled: true, Error: err.Error()}, nil
		}
		return Delivery{Error: err.Error()}, nil
	default:
		if claim != nil {
			claim.Done()
		}
		return Delivery{}, err
	}
}

// SkippedDisabled is the reason given while MetaClaw is switched off.
const SkippedDisabled = "metaclaw is disabled (`metaclaw enable` turns it back on)"

// ErrDisabled answers calls while MetaClaw is switched off.
var ErrDisabled = protocol.Errorf(protocol.CodeHostUnavailable, "%s", SkippedDisabled)

func (r *Relay) off() bool { return r.PassThrough != nil && r.PassThrough() }

// ReplayAsync replays the spool in the background (one replay at a time).
func (r *Relay) ReplayAsync() {
	if r.off() {
		return
	}
	if !r.replaying.CompareAndSwap(false, true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	r.cancelMu.Lock()
	r.cancels = append(r.cancels, cancel)
	r.cancelMu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.replaying.Store(false)
		defer cancel()
		r.Replay(ctx)
	}()
}

// Replay sends spooled events until done or the host goes away.
func (r *Relay) Replay(ctx context.Context) int {
	if r.Spool.Len() == 0 {
		return 0
	}
	n, err := r.Spool.Replay(ctx, func(ctx context.Context, e Entry) error {
		cctx, cancel := context.WithTimeout(ctx, r.callTimeout())
		defer cancel()
		return r.Host.Call(cctx, e.Method, e.Params, nil)
	}, transient)
	if n > 0 {
		r.Log.Info().Int("events", n).Msg("replayed spooled events to the host")
	}
	if err != nil && ctx.Err() == nil {
		r.Log.Debug().Err(err).Msg("spool replay paused")
	}
	return n
}

// Close stops background replay, waiting at most d for it to settle.
func (r *Relay) Close(d time.Duration) {
	r.cancelMu.Lock()
	for _, c := range r.cancels {
		c()
	}
	r.cancelMu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
	r.Host.Close()
}

// transient errors leave an event in the spool; others (the host refused the
// event as malformed) drop it.
func transient(err error) bool {
	return IsUnavailable(err) || protocol.IsCode(err, protocol.CodeBusy) ||
		protocol.IsCode(err, protocol.CodeTimeout) || protocol.IsCode(err, protocol.CodeInternal)
}
