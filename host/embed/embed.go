// Package embed turns texts into vectors for retrieval. The Embedder
// interface is what skills and memory use; the built-in implementation calls
// an OpenAI-compatible /embeddings endpoint, and out-of-process embedders
// (go-plugin) satisfy the same interface.
package embed

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// Embedder maps texts to vectors of a fixed dimension.
type Embedder interface {
	Name() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// HTTP calls an OpenAI-compatible POST {base}/embeddings.
type HTTP struct {
	Base, Key, Model string
	Purpose          string // for usage records, e.g. "embedder"
	Usage            interface {
		RecordUsage(ctx context.Context, u store.Usage) error
	}
	Client *http.Client
}

// Name implements Embedder.
func (h *HTTP) Name() string { return "http:" + h.Model }

// Embed implements Embedder.
func (h *HTTP) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, _ := json.Marshal(map[string]any{"model": h.Model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.Base, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Key != "" {
		req.Header.Set("Authorization", "Bearer "+h.Key)
	}
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode >= 400 {
		return nil, fmt.Errorf("embeddings: HTTP %d: %.300s", resp.StatusCode, raw)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("embeddings: bad answer: %w", err)
	}
	if len(out.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %d vectors for %d texts", len(out.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(vecs) {
			return nil, fmt.Errorf("embeddings: index %d out of range", d.Index)
		}
		vecs[d.Index] = Normalize(d.Embedding)
	}
	if h.Usage != nil {
		purpose := h.Purpose
		if purpose == "" {
			purpose = "embedder"
		}
		_ = h.Usage.RecordUsage(ctx, store.Usage{Purpose: purpose, Model: h.Model, InputTokens: out.Usage.PromptTokens, OK: true})
	}
	return vecs, nil
}

// Normalize scales v to unit length (in place) so cosine is a dot product.
func Normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// Dot is the dot product (cosine for normalised vectors); 0 when lengths differ.
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Encode packs a vector as little-endian float32s (the store's blob format).
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Decode unpacks Encode's format.
func Decode(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
