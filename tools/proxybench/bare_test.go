package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// TestBareProxyAnswersWhileTheBodyArrives: the bare proxy relays a whole
// answer that starts while the request body it forwards is still arriving
// (an upstream that answers first; a client that sends the rest of its
// body only once the answer's header is in). net/http's server, unless
// told the handler is full duplex, reads off or closes an unread request
// body as the answer's header goes out: here it would wait for the rest
// of the body the client holds back; in make bench it closed the body
// under the transport's write loop, which then closed the upstream
// connection mid-answer (see fullDuplex).
func TestBareProxyAnswersWhileTheBodyArrives(t *testing.T) {
	answer := bytes.Repeat([]byte("a"), 4<<20)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.WriteHeader(200)
		w.Write(answer) // before reading the body
		io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	bare := httptest.NewServer(fullDuplex(rp))
	defer bare.Close()

	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", bare.URL+"/v1/chat/completions", pr)
	req.ContentLength = 8
	go pw.Write([]byte(`{"a":`)) // the rest once the answer has begun
	resp, err := bare.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go func() {
		pw.Write([]byte("1}\n"))
		pw.Close()
	}()
	got, err := io.ReadAll(resp.Body)
	if err != nil || len(got) != len(answer) {
		t.Fatalf("answer: %d of %d bytes, %v", len(got), len(answer), err)
	}
}
