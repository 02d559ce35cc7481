package subplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/hashembed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
)

func init() {
	RegisterKind(Kind{
		Name:      sdk.EmbedderKind,
		Handshake: sdk.EmbedderHandshake,
		Plugin:    &sdk.EmbedderPlugin{},
		Probe:     probeEmbedder,
	})
}

// embedderInfo is the kind-specific part of an embedder's identity.
type embedderInfo struct{ dims, maxBatch int }

func probeEmbedder(ctx context.Context, raw any) (Identity, error) {
	c, ok := raw.(*sdk.EmbedderClient)
	if !ok {
		return Identity{}, fmt.Errorf("unexpected client type %T", raw)
	}
	info, err := c.Info(ctx)
	if err != nil {
		st := status.Convert(err)
		if st.Code() == codes.Unimplemented {
			return Identity{}, fmt.Errorf("it does not serve %s (is it an embedder plugin?): %s", sdk.EmbedderService, st.Message())
		}
		return Identity{}, fmt.Errorf("Info: %s (%s)", st.Message(), st.Code())
	}
	if strings.TrimSpace(info.Name) == "" {
		return Identity{}, errors.New("Info returned an empty name")
	}
	if info.Dimensions < 0 || info.MaxBatch < 0 {
		return Identity{}, fmt.Errorf("Info returned dimensions %d, max_batch %d", info.Dimensions, info.MaxBatch)
	}
	return Identity{
		Name:    info.Name,
		Version: info.Version,
		Detail:  fmt.Sprintf("dimensions=%d max_batch=%d", info.Dimensions, info.MaxBatch),
	}, nil
}

func parseEmbedderDetail(d string) embedderInfo {
	var e embedderInfo
	_, _ = fmt.Sscanf(d, "dimensions=%d max_batch=%d", &e.dims, &e.maxBatch)
	return e
}

// BuiltinEmbedders are the in-process embedders, by the name used in
// config. They satisfy embed.Embedder exactly like plugins do.
var BuiltinEmbedders = map[string]func() embed.Embedder{
	// hashing: the deterministic feature-hashing embedder of hashembed,
	// the same algorithm as the reference plugin (identical vectors).
	"hashing": func() embed.Embedder { return hashembed.New(hashembed.DefaultDims) },
}

// BuiltinEmbedderNames lists BuiltinEmbedders, sorted.
func BuiltinEmbedderNames() []string {
	var n []string
	for k := range BuiltinEmbedders {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// EmbedderSpec says which embedder OpenEmbedder opens.
type EmbedderSpec struct {
	// Use selects the embedder:
	//   "", "hashing"   the built-in hashing embedder, in process;
	//   "<name>"        the plugin <Dir>/metaclaw-embedder-<name>;
	//   "<path>"        a plugin executable (anything containing "/").
	// Built-in names win over plugin names.
	Use string
	// Args and Env are passed to a plugin process (Env on top of the
	// host's environment).
	Args []string
	Env  []string
	// Options: plugin directory, timeouts, restart policy, logger.
	Options
}

// OpenEmbedder opens the embedder spec names and returns it with a closer
// that stops it. A plugin is launched before OpenEmbedder returns, so a
// misconfigured plugin fails here with a clear error (the caller logs it and
// runs without embeddings, or with the built-in). Once open, a plugin that
// crashes is relaunched on the next call (within the restart policy); calls
// never take longer than Options.CallTimeout. Status rows appear in
// AllStatus until the closer runs.
func OpenEmbedder(ctx context.Context, spec EmbedderSpec, log zerolog.Logger) (embed.Embedder, io.Closer, error) {
	opts := spec.Options
	opts.Logger = log
	use := strings.TrimSpace(spec.Use)
	if use == "" {
		use = "hashing"
	}
	h := NewHost(opts)
	if mk, ok := BuiltinEmbedders[use]; ok {
		e := mk()
		id := Identity{Name: e.Name()}
		if d, ok := e.(sdk.Dimensioned); ok {
			id.Detail = fmt.Sprintf("dimensions=%d", d.Dimensions())
		}
		h.addBuiltin(sdk.EmbedderKind, use, id)
		return e, h, nil
	}
	ps, err := Resolve(sdk.EmbedderKind, use, h.opts.Dir)
	if err != nil {
		_ = h.Close()
		if errors.Is(err, ErrNotFound) && !strings.ContainsRune(use, '/') {
			err = fmt.Errorf("%w (built-in embedders: %s)", err, strings.Join(BuiltinEmbedderNames(), ", "))
		}
		return nil, nil, err
	}
	ps.Args, ps.Env = spec.Args, spec.Env
	e, err := h.Embedder(ctx, ps)
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	return e, h, nil
}

// Embedder launches spec (of kind embedder) on h and returns it as an
// embed.Embedder.
func (h *Host) Embedder(ctx context.Context, spec Spec) (*PluginEmbedder, error) {
	spec.Kind = sdk.EmbedderKind
	in, err := h.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	id := in.Identity()
	info := parseEmbedderDetail(id.Detail)
	e := &PluginEmbedder{in: in, name: id.Name, maxBatch: info.maxBatch}
	e.dims.Store(int64(info.dims))
	return e, nil
}

// maxBatchBytes caps the text sent in one Embed call; a bigger batch is
// split (a single larger text is sent alone).
const maxBatchBytes = 1 << 20

// PluginEmbedder is an embedder plugin seen as an embed.Embedder.
type PluginEmbedder struct {
	in       *Instance
	name     string
	maxBatch int
	dims     atomic.Int64 // from Info, or learnt from the first answer
}

var _ embed.Embedder = (*PluginEmbedder)(nil)

// Name is the plugin's embedding-space name (from its Info), e.g.
// "hashing-ngram-v1-384": the same for the plugin and the built-in when
// they compute the same vectors.
func (e *PluginEmbedder) Name() string { return e.name }

// Dimensions is the vector length; 0 until known.
func (e *PluginEmbedder) Dimensions() int { return int(e.dims.Load()) }

// Instance is the supervised plugin behind e.
func (e *PluginEmbedder) Instance() *Instance { return e.in }

// Embed implements embed.Embedder: batches are split by the plugin's
// max_batch and by size, vectors are checked (count, length, finite) and
// normalised.
func (e *PluginEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([][]float32, 0, len(texts))
	for _, batch := range splitBatches(texts, e.maxBatch, maxBatchBytes) {
		var vecs [][]float32
		err := e.in.Call(ctx, true, func(ctx context.Context, c any) error {
			v, err := c.(*sdk.EmbedderClient).Embed(ctx, batch)
			vecs = v
			return err
		})
		if err != nil {
			return nil, err
		}
		if err := e.check(vecs, len(batch)); err != nil {
			return nil, fmt.Errorf("%s: %w", e.in.label(), err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *PluginEmbedder) check(vecs [][]float32, n int) error {
	if len(vecs) != n {
		return fmt.Errorf("returned %d vectors for %d texts", len(vecs), n)
	}
	dims := int(e.dims.Load())
	if dims == 0 && len(vecs[0]) > 0 {
		e.dims.CompareAndSwap(0, int64(len(vecs[0])))
		dims = int(e.dims.Load())
	}
	for i, v := range vecs {
		if len(v) != dims {
			return fmt.Errorf("vector %d has %d dimensions, expected %d", i, len(v), dims)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("vector %d contains NaN or Inf", i)
			}
		}
		embed.Normalize(v)
	}
	return nil
}

// splitBatches cuts texts into runs of at most maxN texts (0 = no limit)
// and about maxBytes of text.
func splitBatches(texts []string, maxN, maxBytes int) [][]string {
	var out [][]string
	start, size := 0, 0
	for i, t := range texts {
		full := maxN > 0 && i-start >= maxN
		if i > start && (full || size+len(t) > maxBytes) {
			out = append(out, texts[start:i])
			start, size = i, 0
		}
		size += len(t)
	}
	return append(out, texts[start:])
}
