// Package adapters wires agent clients ("claws") to MetaClaw and unwires
// them exactly. One sub-package per client knows that client's real config
// schema; this package holds what they share: the Adapter interface, the
// request and plan types, and the Engine that shows the diff, backs up,
// writes atomically, verifies, records a manifest and restores byte for byte.
package adapters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Via says which integration paths to wire.
type Via string

const (
	ViaProxy Via = "proxy" // the client's LLM provider points at the MetaClaw proxy
	ViaHooks Via = "hooks" // the client's extension / hook / MCP points
	ViaBoth  Via = "both"
)

// ParseVia parses --via.
func ParseVia(s string) (Via, error) {
	switch Via(s) {
	case "", ViaProxy:
		return ViaProxy, nil
	case ViaHooks, ViaBoth:
		return Via(s), nil
	}
	return "", fmt.Errorf("--via %q: use proxy, hooks or both", s)
}

// Proxy reports whether the proxy path is wired.
func (v Via) Proxy() bool { return v == ViaProxy || v == ViaBoth || v == "" }

// Hooks reports whether the hooks path is wired.
func (v Via) Hooks() bool { return v == ViaHooks || v == ViaBoth }

// Adapter is one client.
type Adapter interface {
	// Name is the client id used on the command line ("openclaw").
	Name() string
	// Detect finds the client's files and schema version. A client that is
	// not installed gives Found false and no error; a version this metaclaw
	// does not know gives an *UnsupportedError.
	Detect(env *Env, configOverride string) (*Detection, error)
	// Plan computes every change for req against the files as they were
	// before metaclaw wired them (env.ReadFile gives that view).
	Plan(env *Env, d *Detection, req *Request) (*Plan, error)
}

// Detection is what Detect found.
type Detection struct {
	Client     string
	Found      bool
	Version    string // human readable: "2026.9.6", "config version 3", "QwenPaw"
	Schema     string // schema family, e.g. "v3", "legacy"
	ConfigPath string // the main config file (or directory)
	Home       string // the client's home / state dir
	Agents     []string
	Default    []string // agents wired when --agent is not given
	Notes      []string
	Restart    []Command // how to restart the client as installed here (when known)
}

// UnsupportedError is a client version or layout this metaclaw does not know.
type UnsupportedError struct{ Msg string }

func (e *UnsupportedError) Error() string { return e.Msg }

// Unsupported builds an *UnsupportedError.
func Unsupported(format string, a ...any) error {
	return &UnsupportedError{Msg: fmt.Sprintf(format, a...)}
}

// NotFound is returned by the engine when a client is not installed.
var ErrNotFound = errors.New("client not found")

// Request is what the user asked for plus what the adapters need from the
// MetaClaw config.
type Request struct {
	Agents        []string
	Via           Via
	ProxyHost     string // proxy.host (listen address)
	ProxyPort     int    // proxy.port
	ProxyKey      string // proxy.api_key ("" = none)
	Model         string // --model: overrides the client's current model
	LLMModel      string // llm.model_id: fallback when the client has no model
	ContextWindow int    // context_window (0 = auto)
	MetaclawBin   string // absolute path of the metaclaw executable for hook commands
}

// PlaceholderKey is sent when the proxy has no key: the proxy ignores it.
const PlaceholderKey = "metaclaw-local"

// Key is the API key a client sends to the proxy.
func (r *Request) Key() string {
	if r.ProxyKey != "" {
		return r.ProxyKey
	}
	return PlaceholderKey
}

// LocalHost is the host a client on this machine uses to reach the proxy.
func (r *Request) LocalHost() string {
	h := strings.Trim(r.ProxyHost, "[]")
	switch h {
	case "", "0.0.0.0", "localhost":
		return "127.0.0.1"
	case "::":
		return "[::1]"
	}
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// Loopback reports whether the proxy listens on loopback only.
func (r *Request) Loopback() bool {
	h := strings.Trim(r.ProxyHost, "[]")
	if h == "" || h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// OpenAIURL is the OpenAI-style base URL for agent as seen from host.
func (r *Request) OpenAIURL(host, agent string) string {
	return r.AnthropicURL(host, agent) + "/v1"
}

// AnthropicURL is the Anthropic-style base URL (the SDK appends /v1/messages).
func (r *Request) AnthropicURL(host, agent string) string {
	return "http://" + host + ":" + strconv.Itoa(r.ProxyPort) + "/a/" + agent
}

var agentRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidAgent checks an agent id (it becomes part of the proxy URL path and of
// config keys).
func ValidAgent(a string) error {
	if !agentRe.MatchString(a) {
		return fmt.Errorf("agent id %q: use letters, digits, '.', '_' and '-' (up to 64, starting with a letter or digit)", a)
	}
	return nil
}

// Plan is everything wiring changes.
type Plan struct {
	Client    string
	Detection *Detection
	Agents    []string
	Via       Via
	URLs      map[string]string // agent → base URL written into the client
	Files     []*FileChange
	Setup     []Command // stateful commands (e.g. openshell), each may carry its Undo
	SetupKey  string    // the state Setup establishes; equal keys mean Setup need not run again
	Restart   []Command // reload/restart after the change; failures are warnings
	Notes     []string
	Expect    []Expect // what doctor checks later
	// Sandbox is true for clients that reach the proxy from a container
	// (the proxy must not be loopback-only).
	Sandbox bool
}

// Note appends a note.
func (p *Plan) Note(format string, a ...any) { p.Notes = append(p.Notes, fmt.Sprintf(format, a...)) }

// FileChange is one file after wiring.
type FileChange struct {
	Path   string
	Format string // json, json5, toml, yaml, env, raw
	After  []byte
	Mode   fs.FileMode // for new files (existing files keep theirs)
	Owned  bool        // wholly metaclaw's: unwire removes it even if the client re-saved it
	Link   string      // a symlink to Link instead of content
}

// Command is a client command run through the Runner.
type Command struct {
	Name     string   `json:"name"`
	Args     []string `json:"args"`
	Why      string   `json:"why,omitempty"`
	Optional bool     `json:"optional,omitempty"` // failure is a warning
	Undo     *Command `json:"undo,omitempty"`
}

// String is the command line (arguments with spaces quoted).
func (c Command) String() string {
	parts := []string{c.Name}
	for _, a := range c.Args {
		if a == "" || strings.ContainsAny(a, " \t\"'$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// Expect is one thing doctor verifies in a wired client's files.
type Expect struct {
	File   string `json:"file"`
	Format string `json:"format"`
	Path   []any  `json:"path,omitempty"` // nil: the file must exist
	Want   any    `json:"want,omitempty"`
	What   string `json:"what"`
}

// Runner runs client commands; tests inject a fake.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) (stdout, stderr string, err error)
}

// ExecRunner runs real commands with a timeout.
type ExecRunner struct{ Timeout time.Duration }

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, name string, args ...string) (string, string, error) {
	t := r.Timeout
	if t == 0 {
		t = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// Env is the world the adapters see: the user's home, environment, PATH,
// the runner for client commands and an HTTP client for local reload calls.
type Env struct {
	Home         string // the user's home directory
	Getenv       func(string) string
	LookPath     func(string) (string, error)
	Runner       Runner
	HTTP         *http.Client
	Now          func() time.Time
	MetaclawHome string

	// view maps paths metaclaw has changed to their content before wiring
	// (nil = absent); set by the Engine so plans start from the originals.
	view map[string][]byte
}

// DefaultEnv is the real environment.
func DefaultEnv(metaclawHome string) *Env {
	home, _ := os.UserHomeDir()
	return &Env{
		Home:         home,
		Getenv:       os.Getenv,
		LookPath:     exec.LookPath,
		Runner:       ExecRunner{},
		HTTP:         &http.Client{Timeout: 5 * time.Second},
		Now:          time.Now,
		MetaclawHome: metaclawHome,
	}
}

// Get returns an environment variable.
func (e *Env) Get(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

// Expand replaces a leading ~ with the home directory.
func (e *Env) Expand(p string) string {
	if p == "~" {
		return e.Home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(e.Home, p[2:])
	}
	return p
}

// ReadFile reads a file as it was before metaclaw wired it.
func (e *Env) ReadFile(path string) ([]byte, error) {
	if e.view != nil {
		if b, ok := e.view[realPath(path)]; ok {
			if b == nil {
				return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
			}
			return b, nil
		}
	}
	return os.ReadFile(path)
}

// Exists reports whether a file existed before metaclaw wired it.
func (e *Env) Exists(path string) bool {
	if e.view != nil {
		if b, ok := e.view[realPath(path)]; ok {
			return b != nil
		}
	}
	_, err := os.Stat(path)
	return err == nil
}

// Has reports whether name is on PATH.
func (e *Env) Has(name string) bool {
	if e.LookPath == nil {
		return false
	}
	_, err := e.LookPath(name)
	return err == nil
}

// FileMode returns the mode of an existing file, or def.
func FileMode(path string, def fs.FileMode) fs.FileMode {
	if st, err := os.Stat(path); err == nil {
		return st.Mode().Perm()
	}
	return def
}
