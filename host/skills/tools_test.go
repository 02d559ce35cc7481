package skills

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
)

func TestSkillsSearchTool(t *testing.T) {
	lib, st := bankLib(t)
	c := core.New(core.Options{Store: st, Log: zerolog.Nop()})
	defer c.Close()
	RegisterTools(c, lib, nil)
	res, err := c.CallTool(context.Background(), core.ToolSkillsSearch, core.Query{Agent: "main"}, json.RawMessage(`{"query":"my test fails only sometimes in CI, flaky","limit":3}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"name"`) || !strings.Contains(strings.ToLower(string(b)), "flak") {
		t.Fatalf("result %s", b)
	}
	if _, err := c.CallTool(context.Background(), "skills_search", core.Query{}, json.RawMessage(`{"query":""}`)); err == nil {
		t.Fatal("empty query accepted")
	}
}
