package prompt

import "testing"

func TestEndsInReasoning(t *testing.T) {
	for text, want := range map[string]bool{
		"<|im_start|>assistant\n":                             false,
		"<|im_start|>assistant\n<think>\n":                    true, // Qwen3 thinking-2507 style
		"<|im_start|>assistant\n<think>\n\n</think>\n\n":      false,
		"<think>a</think> … <|im_start|>assistant\n<think>\n": true,
	} {
		if got := endsInReasoning(text); got != want {
			t.Errorf("endsInReasoning(%q) = %v", text, got)
		}
	}
}
