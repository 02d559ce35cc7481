// Package mcpserver is `metaclaw mcp`: a Model Context Protocol server on
// stdio (modelcontextprotocol/go-sdk) that offers the learning core's tools
// (memory_search, memory_store, skills_search, metaclaw_status, … — whatever
// is registered on the core) to any MCP client. Tools are listed and called
// through the host socket (tools.list / tools.call), so the list follows the
// host: it is refreshed on every tools/list request and clients are told
// about changes (notifications/tools/list_changed).
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/plugin"
)

// Options configure the server.
type Options struct {
	Relay   *plugin.Relay
	Log     zerolog.Logger
	Version string
	// Agent and Session are the identity tools run on behalf of.
	Agent, Session string
	// CallTimeout bounds one tool call (default 60s).
	CallTimeout time.Duration
}

// Server is one MCP server.
type Server struct {
	o   Options
	srv *mcp.Server

	mu     sync.Mutex
	tools  map[string]string // name → fingerprint of its definition
	synced time.Time
}

// New builds the server; tools are fetched lazily (Sync).
func New(o Options) *Server {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	s := &Server{o: o, tools: map[string]string{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "metaclaw", Title: "MetaClaw", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "MetaClaw is the user's learning layer: long-term memory and a skill library. " +
			"Use its tools to search, store or forget memories and to find skills.",
		HasTools: true,
	})
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				s.Sync(ctx, time.Second)
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// MCP exposes the SDK server (tests).
func (s *Server) MCP() *mcp.Server { return s.srv }

// Run serves on t until the client goes away.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	s.Sync(ctx, 5*time.Second)
	return s.srv.Run(ctx, t)
}

// Sync replaces the offered tools with the host's list. When the host
// cannot be reached the current list stays.
func (s *Server) Sync(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res protocol.ToolsListResult
	if err := s.o.Relay.Host.Call(ctx, protocol.MethodToolsList, protocol.Identity{Agent: s.o.Agent, Client: "mcp"}, &res); err != nil {
		s.o.Log.Debug().Err(err).Msg("tools.list")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range res.Tools {
		schema := objectSchema(t.InputSchema)
		fp := t.Description + "\x00" + string(schema)
		seen[t.Name] = true
		if s.tools[t.Name] == fp {
			continue
		}
		if err := s.add(t.Name, t.Description, schema); err != nil {
			s.o.Log.Warn().Err(err).Str("tool", t.Name).Msg("tool not offered over MCP")
			continue
		}
		s.tools[t.Name] = fp
	}
	var gone []string
	for name := range s.tools {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		s.srv.RemoveTools(gone...)
		for _, n := range gone {
			delete(s.tools, n)
		}
	}
	s.synced = time.Now()
}

// objectSchema returns the tool's schema if it is a JSON object schema of
// type object, else a permissive object schema (MCP requires type object).
func objectSchema(raw json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(bytes.TrimSpace(raw), &m) == nil && m["type"] == "object" {
		return raw
	}
	return json.RawMessage(`{"type":"object","additionalProperties":true}`)
}

func (s *Server) add(name, description string, schema json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid tool definition: %v", r)
		}
	}()
	s.srv.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: schema}, s.handler(name))
	return nil
}

func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
		defer cancel()
		args := json.RawMessage("{}")
		if req != nil && req.Params != nil && len(bytes.TrimSpace(req.Params.Arguments)) > 0 {
			args = req.Params.Arguments
		}
		var res protocol.ToolsCallResult
		err := s.o.Relay.Host.Call(ctx, protocol.MethodToolsCall, protocol.ToolsCallParams{
			Identity: protocol.Identity{Agent: s.o.Agent, Session: s.o.Session, Client: "mcp"}, Name: name, Arguments: args,
		}, &res)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: textOf(res.Result)}}}
		var structured map[string]any
		if json.Unmarshal(res.Result, &structured) == nil && structured != nil {
			out.StructuredContent = structured
		}
		return out, nil
	}
}

// textOf shows a JSON string as itself and anything else as indented JSON.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		return buf.String()
	}
	return string(raw)
}
