package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/rpc"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/version"
	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// newRPCServer builds the JSON-RPC socket server for plugin processes. A
// `shutdown` call carrying the token of run/rpc.token stops the host (the
// token file is written by listenRPC, readable by the owner only).
func newRPCServer(home string, c *core.Core, log zerolog.Logger, status func(context.Context) any, stop chan<- struct{}, activity func()) *rpc.Server {
	token := make([]byte, 24)
	_, _ = rand.Read(token)
	return rpc.New(rpc.Options{
		Core: c, Log: log.With().Str("part", "rpc").Logger(), Status: status, Version: version.Version,
		ShutdownToken: hex.EncodeToString(token),
		Activity:      activity,
		Shutdown: func() {
			select {
			case stop <- struct{}{}:
			default:
			}
		},
	})
}

// listenRPC serves the socket at run/metaclaw.sock (0600). A failure is
// logged, not fatal: the proxy serves without the plugin path. The returned
// func closes the socket and removes it and the token file.
func listenRPC(home string, s *rpc.Server, log zerolog.Logger) func() {
	path := protocol.SocketPath(home)
	if err := s.Listen(path); err != nil {
		log.Error().Err(err).Msg("JSON-RPC socket unavailable; plugin processes cannot reach the host")
		return func() { s.Close() }
	}
	tokenPath := protocol.TokenPath(home)
	if err := atomicfile.Write(tokenPath, []byte(s.ShutdownToken()+"\n"), 0o600); err != nil { // 0600 even over a stale file
		log.Warn().Err(err).Msg("write rpc token")
	}
	log.Info().Str("socket", path).Msg("JSON-RPC socket listening")
	return func() {
		s.Close()
		os.Remove(tokenPath)
	}
}
