// Package llm is the client for the layer's own LLM calls (skill evolver,
// memory extractor, judge): one non-streaming completion against an
// OpenAI-compatible or Anthropic endpoint, with its token usage recorded.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/version"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // user | assistant
	Content string `json:"content"`
}

// Request is one completion.
type Request struct {
	System      string
	Messages    []Message
	MaxTokens   int      // default 2048
	Temperature *float64 // nil = the endpoint's default
	// JSON asks OpenAI-compatible endpoints for a JSON object (response_format).
	JSON bool
}

// Response is what came back.
type Response struct {
	Text         string
	Model        string
	InputTokens  int
	OutputTokens int
}

// UsageRecorder stores usage; store.Store satisfies it.
type UsageRecorder interface {
	RecordUsage(ctx context.Context, u store.Usage) error
}

// Client calls one endpoint for one purpose.
type Client struct {
	ep      config.Endpoint
	purpose string
	usage   UsageRecorder
	http    *http.Client
}

// ErrNotConfigured means the endpoint has no base URL.
var ErrNotConfigured = errors.New("llm endpoint not configured")

// New returns a client. rec may be nil.
func New(ep config.Endpoint, purpose string, rec UsageRecorder, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	return &Client{ep: ep, purpose: purpose, usage: rec, http: &http.Client{Timeout: timeout}}
}

// Configured reports whether the endpoint can be called.
func (c *Client) Configured() bool { return c != nil && c.ep.APIBase != "" }

// Complete runs one completion and records its usage (also on failure).
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	if !c.Configured() {
		return Response{}, ErrNotConfigured
	}
	resp, err := c.complete(ctx, req)
	if c.usage != nil {
		u := store.Usage{Purpose: c.purpose, Model: c.ep.Model, InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens, OK: err == nil}
		if resp.Model != "" {
			u.Model = resp.Model
		}
		_ = c.usage.RecordUsage(context.WithoutCancel(ctx), u)
	}
	return resp, err
}

func (c *Client) complete(ctx context.Context, req Request) (Response, error) {
	api := apiformat.API(c.ep.API)
	if api != apiformat.Anthropic {
		api = apiformat.OpenAI
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 2048
	}
	body := map[string]any{"model": c.ep.Model, "max_tokens": maxTokens}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	base := strings.TrimRight(c.ep.APIBase, "/")
	var url string
	if api == apiformat.Anthropic {
		if !strings.HasSuffix(base, "/v1") {
			base += "/v1"
		}
		url = base + "/messages"
		if req.System != "" {
			body["system"] = req.System
		}
		body["messages"] = req.Messages
	} else {
		url = base + "/chat/completions"
		msgs := make([]Message, 0, len(req.Messages)+1)
		if req.System != "" {
			msgs = append(msgs, Message{Role: "system", Content: req.System})
		}
		body["messages"] = append(msgs, req.Messages...)
		if req.JSON {
			body["response_format"] = map[string]string{"type": "json_object"}
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return Response{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return Response{}, fmt.Errorf("%s: %w", c.purpose, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", "metaclaw/"+version.Version)
	if api == apiformat.Anthropic {
		hr.Header.Set("anthropic-version", "2023-06-01")
		if c.ep.APIKey != "" {
			hr.Header.Set("x-api-key", c.ep.APIKey)
		}
	} else if c.ep.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.ep.APIKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return Response{}, fmt.Errorf("%s call: %w", c.purpose, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return Response{}, fmt.Errorf("%s call: read answer: %w", c.purpose, err)
	}
	if resp.StatusCode >= 400 {
		msg := string(out)
		msg = textclip.Ellipsis(msg, 500)
		return Response{}, fmt.Errorf("%s call: HTTP %d: %s", c.purpose, resp.StatusCode, msg)
	}
	sum, err := apiformat.SummarizeResponse(api, out)
	if err != nil {
		return Response{}, fmt.Errorf("%s call: %w", c.purpose, err)
	}
	return Response{Text: sum.Text, Model: sum.Model, InputTokens: sum.InputTokens, OutputTokens: sum.OutputTokens}, nil
}

// ExtractJSON returns the first JSON object or array in text (models often
// wrap JSON in prose or ``` fences).
func ExtractJSON(text string) (string, bool) {
	text = strings.TrimSpace(text)
	if i := strings.Index(text, "```"); i >= 0 {
		rest := text[i+3:]
		rest = strings.TrimPrefix(rest, "json")
		if j := strings.Index(rest, "```"); j >= 0 {
			inner := strings.TrimSpace(rest[:j])
			if json.Valid([]byte(inner)) {
				return inner, true
			}
		}
	}
	for start := 0; start < len(text); start++ {
		if text[start] != '{' && text[start] != '[' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[start:]))
		var v json.RawMessage
		if dec.Decode(&v) == nil {
			return string(v), true
		}
	}
	return "", false
}
