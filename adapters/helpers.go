package adapters

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// Reloader is implemented by adapters whose client reloads through a local
// API rather than a command (PicoClaw's POST /reload). The engine calls it
// after wiring and after unwiring.
type Reloader interface {
	Reload(ctx context.Context, env *Env) (string, error)
}

// PickAgents returns the agents to wire: the requested ones (deduplicated,
// in order) or the client's default.
func PickAgents(req *Request, d *Detection) []string {
	if len(req.Agents) == 0 {
		return slices.Clone(d.Default)
	}
	var out []string
	for _, a := range req.Agents {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// UnknownAgent is the error for an agent the client does not define.
func UnknownAgent(client, agent, where string, known []string) error {
	k := "none"
	if len(known) > 0 {
		k = strings.Join(known, ", ")
	}
	return fmt.Errorf("%s has no agent %q in %s (agents there: %s); create it in %s first, or pass --agent with one of those", client, agent, where, k, client)
}

// HookCommand is the one-shot hook command line for client shells
// (`<metaclaw> plugin hook --client <c> [--agent <a>] <event>`).
func HookCommand(bin, client, agent, event string) string {
	s := shellQuote(bin) + " plugin hook --client " + client
	if agent != "" {
		s += " --agent " + shellQuote(agent)
	}
	return s + " " + event
}

// ServeArgv is the long-lived stdio plugin command (`metaclaw plugin serve --client <c>`).
func ServeArgv(bin, client string) []string {
	return []string{bin, "plugin", "serve", "--client", client}
}

// MCPArgs are the arguments of the MCP stdio server (`metaclaw mcp
// [--agent <a>]`); agent "" serves whichever agent the client is.
func MCPArgs(agent string) []string {
	if agent == "" {
		return []string{"mcp"}
	}
	return []string{"mcp", "--agent", agent}
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\$`") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Bin is the metaclaw binary used in hook commands.
func (r *Request) Bin() string {
	if r.MetaclawBin == "" {
		return "metaclaw"
	}
	return r.MetaclawBin
}

// ModelRef returns the string form of a model setting that is either a
// string or an object with "primary".
func ModelRef(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if s, ok := v["primary"].(string); ok {
			return s
		}
	}
	return ""
}

// SetModelRef writes ref at p, keeping the shape the file uses: a string
// stays a string, an object gets its "primary" set, a missing value
// becomes {primary: ref} when objectWhenMissing, else a string.
func SetModelRef(doc *edit.JSON, p edit.Path, ref string, objectWhenMissing bool) error {
	cur, ok := doc.Get(p)
	switch {
	case ok && isString(cur):
		return doc.Set(p, ref)
	case ok && isMap(cur):
		return doc.Set(append(slices.Clone(p), "primary"), ref)
	case objectWhenMissing:
		return doc.Set(append(slices.Clone(p), "primary"), ref)
	default:
		return doc.Set(p, ref)
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }
func isMap(v any) bool    { _, ok := v.(map[string]any); return ok }

// Str reads a string at p.
func Str(doc interface{ Get(edit.Path) (any, bool) }, p ...any) string {
	v, _ := doc.Get(edit.Path(p))
	s, _ := v.(string)
	return s
}

// Num reads a number at p (decoders give float64 or int64).
func Num(doc interface{ Get(edit.Path) (any, bool) }, p ...any) (int64, bool) {
	v, ok := doc.Get(edit.Path(p))
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case float64:
		return int64(n), n == float64(int64(n))
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// Keys lists the keys of the object at p, sorted.
func Keys(doc interface{ Get(edit.Path) (any, bool) }, p ...any) []string {
	v, _ := doc.Get(edit.Path(p))
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ModelOr picks the model: --model, then the client's current model, then
// llm.model_id; an error names the fix.
func ModelOr(req *Request, current, client, where string) (string, error) {
	switch {
	case req.Model != "":
		return req.Model, nil
	case current != "":
		return current, nil
	case req.LLMModel != "":
		return req.LLMModel, nil
	}
	return "", fmt.Errorf("%s: cannot tell which model to use (%s is not set); pass --model MODEL or set llm.model_id", client, where)
}

// NeedsReachableProxy is the error for sandboxed clients when the proxy
// listens on loopback only or has no key.
func NeedsReachableProxy(client, from string, req *Request) error {
	if !req.Loopback() && req.ProxyKey != "" {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s runs its model client in %s, which cannot reach a proxy that listens on %s only.\n", client, from, req.LocalHost())
	b.WriteString("Let the proxy listen on the host address the sandbox can reach, protected by a key, then wire again:\n")
	if req.ProxyKey == "" {
		b.WriteString("  metaclaw config set proxy.api_key \"$(head -c 24 /dev/urandom | base64 | tr -d '/+=')\"\n")
	}
	if req.Loopback() {
		b.WriteString("  metaclaw config set proxy.host 172.17.0.1    # the docker0 bridge address (see `ip -4 addr show docker0`); 0.0.0.0 also works but listens on every interface\n")
	}
	b.WriteString("  metaclaw stop; metaclaw start\n")
	fmt.Fprintf(&b, "  metaclaw wire %s --yes", client)
	return fmt.Errorf("%s", b.String())
}
