package core

import (
	"context"
	"testing"
	"time"
)

func TestWaitForGap(t *testing.T) {
	c := &Core{inflight: newInflight()}
	ctx := context.Background()
	if !c.WaitForGap(ctx, time.Hour) {
		t.Fatal("no request in flight, yet no gap")
	}
	a, b := c.Answering(), c.Answering()
	if c.WaitForGap(ctx, time.Millisecond) {
		t.Fatal("a gap while two requests are answered")
	}
	got := make(chan bool, 1)
	go func() { got <- c.WaitForGap(ctx, time.Hour) }()
	a()
	a() // twice: counted once
	select {
	case <-got:
		t.Fatal("a gap while one request is still answered")
	default:
	}
	b()
	if !<-got {
		t.Fatal("the wait did not end with the last answer")
	}
	cctx, cancel := context.WithCancel(ctx)
	defer c.Answering()()
	go cancel()
	if c.WaitForGap(cctx, time.Hour) {
		t.Fatal("a gap reported for a cancelled wait")
	}
}
