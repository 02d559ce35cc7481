package llm

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

type usageLog struct {
	mu sync.Mutex
	u  []store.Usage
}

func (l *usageLog) RecordUsage(_ context.Context, u store.Usage) error {
	l.mu.Lock()
	l.u = append(l.u, u)
	l.mu.Unlock()
	return nil
}

func TestCompleteBothFormats(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	tests := []struct {
		api, base string
		path      string
	}{
		{"openai", up.URL + "/v1", "/v1/chat/completions"},
		{"anthropic", up.URL, "/v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.api, func(t *testing.T) {
			var log usageLog
			c := New(config.Endpoint{APIBase: tt.base, APIKey: "k", Model: "judge-1", API: tt.api}, "evolver", &log, 0)
			resp, err := c.Complete(context.Background(), Request{System: "be brief", Messages: []Message{{Role: "user", Content: "hello"}}, JSON: true})
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(resp.Text) != "FAKE-REPLY-OK" || resp.InputTokens != 42 || resp.OutputTokens != 7 {
				t.Fatalf("response %+v", resp)
			}
			last := up.Last()
			if last.Path != tt.path || last.Body["model"] != "judge-1" {
				t.Fatalf("request %s %v", last.Path, last.Body)
			}
			if len(log.u) != 1 || !log.u[0].OK || log.u[0].Purpose != "evolver" || log.u[0].InputTokens != 42 {
				t.Fatalf("usage %+v", log.u)
			}
			_, err = c.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "FAIL-500"}}})
			if err == nil || !strings.Contains(err.Error(), "HTTP 500") || len(log.u) != 2 || log.u[1].OK {
				t.Fatalf("failure: %v %+v", err, log.u)
			}
		})
	}
	if _, err := New(config.Endpoint{}, "x", nil, 0).Complete(context.Background(), Request{}); err != ErrNotConfigured {
		t.Fatalf("unconfigured: %v", err)
	}
}

func TestExtractJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"Sure!\n```json\n{\"skills\": []}\n```\nDone.", `{"skills": []}`},
		{`Here: [1, 2] and more`, `[1, 2]`},
		{`prefix {broken then {"ok":true}`, `{"ok":true}`},
		{`no json`, ``},
	}
	for _, tt := range tests {
		got, ok := ExtractJSON(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("ExtractJSON(%q) = %q %v, want %q", tt.in, got, ok, tt.want)
		}
	}
}
