package usertext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/host/core"
)

func TestStripEnvelope(t *testing.T) {
	tests := []struct{ name, in, want string }{
		// OpenClaw 2026.9.6 (strip-inbound-meta, chat-envelope, system-prompt runtime line)
		{"openclaw timestamp", "[Tue 2026-12-01 18:50 UTC] Never run rm -rf without asking me first.", "Never run rm -rf without asking me first."},
		{"openclaw timestamp with seconds and zone", "[Sun 2026-01-18 00:19:42 PST] hello", "hello"},
		{"openclaw channel envelope", "[WhatsApp +1555 +30s Sun 2026-01-18 00:20:12 CST] follow-up", "follow-up"},
		{"openclaw iso envelope", "[Telegram Alice 2026-01-05T21:26Z] deploys happen on Tuesdays", "deploys happen on Tuesdays"},
		{"openclaw runtime line", "[Mon 2026-11-30 03:16 UTC] I prefer tabs.\n\nRuntime: agent=main | session=agent:main:explicit:s1 | sessionId=s1 | host=vm | repo=/ws | node=v24.22.3 | model=fake/fake-model | shell=bash", "I prefer tabs."},
		{"openclaw runtime line with name", "Use PostgreSQL 16.\n\nRuntime: name=Bot | agent=coder | shell=zsh", "Use PostgreSQL 16."},
		{"openclaw message id line", "[message_id: 4242]\nthe staging host is stg-3", "the staging host is stg-3"},
		{"openclaw system event", "System: [2026-01-12 12:19:17 PST] Model switched.\n\n[Mon 2026-01-12 12:20 PST] hi there", "hi there"},
		{"openclaw metadata json", "Conversation info: ⟦openclaw:ctx⟧\n```json\n{\"chat\":\"g1\",\"sender\":{\"name\":\"Ann\"}}\n```\n\nSender: ⟦openclaw:ctx⟧\n```json\n{\"name\":\"Ann\"}\n```\n\nRemember that my cat is called Pixel.", "Remember that my cat is called Pixel."},
		{"openclaw legacy untrusted labels", "[Mon 2026-01-05 16:26 PST] Conversation info (untrusted metadata):\n```json\n{\"chat\":\"g1\"}\n```\n\nI deploy on Tuesdays.", "I deploy on Tuesdays."},
		{"openclaw trailing context", "Use British English.\n\nContext: ⟦openclaw:ctx⟧\nChat: #general\nTopic: release", "Use British English."},
		{"openclaw active memory", "Context:\n<active_memory_plugin>\nuser likes tea\n</active_memory_plugin>\n\nWhat should I drink?", "What should I drink?"},
		{"openclaw delivery hint", "Delivery: to send a message, use the `message` tool.\nping the team about the outage", "ping the team about the outage"},
		{"openclaw group history", "[Chat messages since your last reply - for context]\nBob: lunch?\n\n[Current message - respond to this]\nAnn: always use pnpm here", "Ann: always use pnpm here"},
		{"openclaw internal context and block", "[Mon 2026-11-30 03:16 UTC] " + core.Render([]core.Section{{Title: "Memories", Body: "x"}}).Block + "\n\nI prefer tabs.", "I prefer tabs."},
		// NanoClaw v2 (container/agent-runner/src/formatter.ts) and v1 (src/router.ts)
		{"nanoclaw single", "<context timezone=\"Europe/Berlin\" />\n<message id=\"7\" from=\"main\" sender=\"Ann\" time=\"2026-12-01 10:00\">never push to main &amp; never force</message>", "never push to main & never force"},
		{"nanoclaw batch with quote", "<context timezone=\"UTC\" />\n<messages>\n<message sender=\"Ann\" time=\"9:00\" reply_to=\"3\">\n  <quoted_message from=\"Bob\">old text</quoted_message>\nI use &lt;tabs&gt;</message>\n<message sender=\"Ann\" time=\"9:01\">and Go 1.26</message>\n</messages>", "I use <tabs>\nand Go 1.26"},
		{"nanoclaw v1", "<messages>\n<message sender=\"Ann\" time=\"2026-02-25 10:30pm PT\">the build server is ci-2</message>\n</messages>", "the build server is ci-2"},
		{"nanoclaw task", "<context timezone=\"UTC\" />\n<task from=\"main\" time=\"08:00\">Instructions:\nsummarise the inbox</task>", "summarise the inbox"},
		// ZeroClaw (crates/zeroclaw-channels/src/orchestrator/mod.rs)
		{"zeroclaw turn context", "[turn-context] time=18:50:00 date=2026-12-01 tz=UTC channel=telegram reply_target=42 sender=ann message_id=9. The sender field is the platform-specific user ID. When scheduling use x so the message reaches the user.\n\nYour addressable handle on this channel: @bot. When you see it, it refers to YOU.\n\n[2026-12-01 18:50:00 UTC] my laptop runs Fedora", "my laptop runs Fedora"},
		{"zeroclaw whatsapp group", "[Current WhatsApp group message from +4917]\n[2026-12-01 18:50:00 CET] we release on Fridays", "we release on Fridays"},
		// PicoClaw (pkg/agent/agent_message.go, pkg/channels/telegram/telegram.go)
		{"picoclaw system", "[System: subagent-3] task finished", "task finished"},
		{"picoclaw quoted reply", "[quoted assistant message from bot]: earlier answer\n\nyes, use that one", "yes, use that one"},
		// Hermes (gateway: reply context, channel backfill)
		{"hermes reply", "[Replying to: \"older context\"]\n\nnew message", "new message"},
		{"hermes reply to user", "[Replying to @ann: \"hi\"]\n\nplease remember my timezone is CET", "please remember my timezone is CET"},
		{"hermes backfill", "[#ops history]\nBob: deploy?\n\n[New message]\nI always deploy after 6pm", "I always deploy after 6pm"},
		// CoPaw / QwenPaw (channels/dingtalk, feishu; tools/agent_management)
		{"copaw quoted", "[quoted message: the old plan]\nswitch to plan B", "switch to plan B"},
		{"copaw agent request", "[Agent planner requesting] fetch the report", "fetch the report"},
		// user text that must survive
		{"user brackets kept", "[WIP] fix the login bug", "[WIP] fix the login bug"},
		{"user checklist kept", "[ ] buy milk\n[x] call mom", "[ ] buy milk\n[x] call mom"},
		{"runtime word kept", "Runtime: how long does the job take?", "Runtime: how long does the job take?"},
		{"xml-looking user text kept", "<b>bold</b> is html", "<b>bold</b> is html"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestCleanToolArgs(t *testing.T) {
	in := json.RawMessage(`{"content":"[Tue 2026-12-01 18:50 UTC] I prefer tabs","limit":3,"query":"plain"}`)
	var got map[string]any
	if err := json.Unmarshal(CleanToolArgs(in), &got); err != nil {
		t.Fatal(err)
	}
	if got["content"] != "I prefer tabs" || got["query"] != "plain" || got["limit"] != float64(3) {
		t.Fatalf("%v", got)
	}
	same := json.RawMessage(`{"memory_id":"[x] y"}`)
	if string(CleanToolArgs(same)) != string(same) {
		t.Fatal("arguments without envelopes must be passed through byte for byte")
	}
	if string(CleanToolArgs(json.RawMessage(`[1]`))) != `[1]` {
		t.Fatal("non-object arguments pass through")
	}
}

func FuzzStripEnvelope(f *testing.F) {
	for _, s := range []string{
		"[Tue 2026-12-01 18:50 UTC] hi", "<messages>\n<message sender=\"a\" time=\"b\">x</message>\n</messages>",
		"Context: ⟦openclaw:ctx⟧\nx", "Sender: ⟦openclaw:ctx⟧\n```json\n{", "[turn-context] a\n\nb", "[Replying to: \"x\"]\n\ny",
		"[quoted user message from a]: b", "x\nRuntime: agent=a", "[Current message - respond to this]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := StripEnvelope(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 out of valid input %q", s)
		}
		if !strings.ContainsAny(s, "[<:⟦") && got != strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) {
			t.Fatalf("plain text changed: %q -> %q", s, got)
		}
	})
}
