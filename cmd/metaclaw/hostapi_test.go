package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIUsesTheHostAPI checks that, while a host runs, the CLI changes
// skills and memories through the same JSON API the dashboard uses, so the
// running host sees the change at once.
func TestCLIUsesTheHostAPI(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	dir := filepath.Join(c.home, "skills", "release-checklist")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: release-checklist\ndescription: Steps to cut a release\nstatus: pending\n---\n1. Freeze.\n2. Tag.\n"), 0o644)
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %s", out)
	}
	st := c.status()
	api := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+st.Listen+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.proxyKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	out, code := c.run("skills", "approve", "release-checklist")
	if code != 0 || !strings.Contains(out, "approved release-checklist") {
		t.Fatalf("approve: %d %s", code, out)
	}
	if code, body := api("GET", "/v1/skills/release-checklist", ""); code != 200 || !strings.Contains(body, `"status":"active"`) {
		t.Fatalf("host sees %d %s", code, body)
	}
	out, code = c.run("skills", "disable", "release-checklist")
	if code != 0 || !strings.Contains(out, "is disabled") {
		t.Fatalf("disable: %d %s", code, out)
	}
	if out, code := c.run("skills", "approve", "no-such-skill"); code == 0 || !strings.Contains(out, "running host") {
		t.Fatalf("unknown skill through the host: %d %s", code, out)
	}

	code, body := api("POST", "/v1/memory/store", `{"content":"The user prefers tea over coffee","memory_type":"preference"}`)
	if code != 200 {
		t.Fatalf("store: %d %s", code, body)
	}
	var stored struct {
		MemoryID string `json:"memory_id"`
	}
	json.Unmarshal([]byte(body), &stored)
	out, code = c.run("memory", "edit", stored.MemoryID, "--content", "The user prefers green tea")
	if code != 0 || !strings.Contains(out, "green tea") {
		t.Fatalf("edit: %d %s", code, out)
	}
	if code, body := api("GET", "/v1/memory/"+stored.MemoryID, ""); code != 200 || !strings.Contains(body, "green tea") {
		t.Fatalf("host sees %d %s", code, body)
	}
	if out, code := c.run("memory", "forget", stored.MemoryID); code != 0 || !strings.Contains(out, "forgot") {
		t.Fatalf("forget: %d %s", code, out)
	}
	if code, body := api("GET", "/v1/memory/"+stored.MemoryID, ""); code != 404 {
		t.Fatalf("forgotten memory still served: %d %s", code, body)
	}
}
