package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
)

// probeText is the user text of doctor's probe turn. The probe asks the core
// for context only (no session, so nothing is remembered for a later turn;
// no LLM call; no turn recorded).
const probeText = "metaclaw doctor probe: is the learning core reachable?"

// socketProbe runs doctor's "a probe turn reaches the core" check over the
// host socket: one connection and one ping per doctor run, then a context
// call per wired agent.
type socketProbe struct {
	socket string
	dialed bool
	c      *protocol.Client
	pong   protocol.PingResult
	what   string // the connection problem, when there is one
	fix    string
}

func newSocketProbe(home string) *socketProbe {
	return &socketProbe{socket: protocol.SocketPath(home)}
}

func (p *socketProbe) connect(ctx context.Context) {
	if p.dialed {
		return
	}
	p.dialed = true
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := protocol.Dial(dctx, p.socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.what, p.fix = "host not running: no socket at "+p.socket, "metaclaw start"
		return
	case errors.Is(err, syscall.ECONNREFUSED):
		p.what = fmt.Sprintf("socket refused: %v (a stale socket: the host is not running)", err)
		p.fix = "metaclaw start (it replaces the stale socket)"
		return
	case errors.Is(err, fs.ErrPermission):
		p.what = fmt.Sprintf("socket not accessible: %v", err)
		p.fix = "run doctor as the user that runs the host (the socket is 0600)"
		return
	case err != nil:
		p.what, p.fix = fmt.Sprintf("cannot connect to the host socket: %v", err), "metaclaw stop; metaclaw start"
		return
	}
	pctx, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if err := c.Call(pctx, protocol.MethodPing, nil, &p.pong); err != nil || !p.pong.Pong {
		c.Close()
		p.what = fmt.Sprintf("host socket %s accepts but does not answer ping: %v", p.socket, err)
		p.fix = "metaclaw stop; metaclaw start"
		return
	}
	p.c = c
}

// Probe implements adapters.DoctorInput.Probe.
func (p *socketProbe) Probe(ctx context.Context, client, agent string) (bool, string, string) {
	p.connect(ctx)
	if p.c == nil {
		return false, "probe turn for agent " + agent + ": " + p.what, p.fix
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var res protocol.ContextResult
	err := p.c.Call(cctx, protocol.MethodContext, protocol.ContextParams{
		Identity:  protocol.Identity{Agent: agent, Client: client},
		UserTexts: []string{probeText},
	}, &res)
	switch {
	case protocol.IsCode(err, protocol.CodeInvalidParams):
		return false, fmt.Sprintf("probe turn for agent %s refused by the host: %v", agent, err),
			fmt.Sprintf("metaclaw wire %s --agent <name> --force (agent names: letters, digits and . _ : @ -)", client)
	case err != nil:
		return false, fmt.Sprintf("probe turn for agent %s did not get through the core: %v", agent, err),
			"metaclaw status; then metaclaw stop; metaclaw start"
	case res.Skipped != "":
		return false, fmt.Sprintf("probe turn for agent %s reached the host but the core skipped it: %s", agent, res.Skipped),
			"metaclaw status"
	}
	return true, fmt.Sprintf("probe turn for agent %s reaches the core (host %s, pid %d; context block %d tokens)",
		agent, p.pong.Version, p.pong.PID, res.Tokens), ""
}

// Close ends the probe's connection.
func (p *socketProbe) Close() {
	if p.c != nil {
		p.c.Close()
	}
}
