package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/skills/bank"
)

// hostSkillNames lists the skills a running host serves on /v1/skills.
func (c *cli) hostSkillNames() []string {
	c.t.Helper()
	st := c.status()
	req, _ := http.NewRequest(http.MethodGet, "http://"+st.Listen+"/v1/skills", nil)
	req.Header.Set("Authorization", "Bearer "+c.proxyKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Skills []struct {
			Name string `json:"name"`
		} `json:"skills"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("/v1/skills: %d %v", resp.StatusCode, err)
	}
	var names []string
	for _, s := range body.Skills {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

func (c *cli) restart() {
	c.t.Helper()
	if out, code := c.run("stop", "--timeout", "20s"); code != 0 {
		c.t.Fatalf("stop: %d %s", code, out)
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		c.t.Fatalf("start: %d %s", code, out)
	}
}

// TestStartWithoutSetupServesTheBank: a host started without `metaclaw
// setup` (make run) serves the built-in bank like one set up by the wizard;
// a bank skill the user deleted stays deleted across restarts.
func TestStartWithoutSetupServesTheBank(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	want := bank.Names()
	if got := c.hostSkillNames(); !slices.Equal(got, want) {
		t.Fatalf("first start serves %d skills, want the bank's %d: %v", len(got), len(want), got)
	}

	gone := want[0]
	if err := os.RemoveAll(filepath.Join(c.home, "skills", gone)); err != nil {
		t.Fatal(err)
	}
	c.restart()
	got := c.hostSkillNames()
	if slices.Contains(got, gone) || len(got) != len(want)-1 {
		t.Fatalf("after deleting %s and restarting: %d skills %v", gone, len(got), got)
	}
}

// TestSetupDeclinedBankStaysDeclined: `setup --install-bank=false` is a
// choice; starting the host afterwards does not install the bank anyway.
func TestSetupDeclinedBankStaysDeclined(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	if out, code := c.run("setup", "--yes", "--install-bank=false", "--no-probe"); code != 0 {
		t.Fatalf("setup: %d %s", code, out)
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	if got := c.hostSkillNames(); len(got) != 0 {
		t.Fatalf("bank declined, host serves %v", got)
	}
}
