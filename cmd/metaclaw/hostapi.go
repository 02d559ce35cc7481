package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
)

// hostAPI is the running host's JSON API: the one the dashboard uses. CLI
// commands that have a route go through it while a host runs, so the host's
// in-memory state (skill snapshot, memory index) changes with the files and
// the store, and the CLI and the page can never disagree. With no host they
// work on the files and the store directly.
type hostAPI struct {
	base, key string
	client    *http.Client
}

// runningHost returns the API of the host owning $METACLAW_HOME, or nil.
func runningHost() *hostAPI {
	h, err := home()
	if err != nil {
		return nil
	}
	info, err := daemon.ReadInfo(h)
	if err != nil {
		return nil
	}
	key := ""
	if cfg, err := config.Load(h); err == nil {
		key = cfg.Proxy.APIKey
	}
	return &hostAPI{base: info.URL(), key: key, client: &http.Client{Timeout: 30 * time.Second}}
}

// call sends a JSON request and decodes the JSON answer into out (may be nil).
func (a *hostAPI) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("host at %s: %w", a.base, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if resp.StatusCode >= 300 {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		msg := string(raw)
		if json.Unmarshal(raw, &e) == nil && len(e.Error) > 0 {
			var s string
			var obj struct {
				Message string `json:"message"`
			}
			switch {
			case json.Unmarshal(e.Error, &s) == nil:
				msg = s
			case json.Unmarshal(e.Error, &obj) == nil && obj.Message != "":
				msg = obj.Message
			}
		}
		return fmt.Errorf("%s (HTTP %d from the running host)", msg, resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("host at %s: bad answer: %w", a.base, err)
		}
	}
	return nil
}
