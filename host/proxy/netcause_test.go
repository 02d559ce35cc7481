package proxy

import (
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestNetCauseHidesAddresses(t *testing.T) {
	addr := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8443}
	refused := &url.Error{Op: "Post", URL: "http://10.1.2.3:8443/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	reset := &net.OpError{Op: "read", Net: "tcp", Addr: addr, Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	dns := &url.Error{Op: "Post", URL: "http://llm.corp.internal/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "llm.corp.internal", IsNotFound: true}}}
	other := &net.OpError{Op: "read", Net: "tcp", Addr: addr, Err: errors.New("weird")}
	for _, c := range []struct {
		err  error
		want string
	}{
		{refused, "connection refused"}, {reset, "connection reset"}, {dns, "does not resolve"}, {other, "network error"},
		{errors.New("wire: sse line longer than 8 MiB"), "sse line longer"},
	} {
		got := netCause(c.err)
		if !strings.Contains(got, c.want) || strings.Contains(got, "10.1.2.3") || strings.Contains(got, "corp.internal") || strings.Contains(got, "8443") {
			t.Errorf("netCause(%v) = %q, want %q and no address", c.err, got, c.want)
		}
	}
}
