package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ardanlabs/jinja"

	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
)

// File names read from a model directory.
const (
	ConfigFile   = tokenizer.ConfigFile // tokenizer_config.json
	TemplateFile = "chat_template.jinja"
)

// Template is a model's compiled chat template. It is safe for concurrent
// use.
type Template struct {
	def     *jinja.Template            // the default template
	named   map[string]*jinja.Template // named templates (tool_use, …)
	special map[string]string          // bos_token, eos_token, … as strings
}

// Options are apply_chat_template's keyword arguments.
type Options struct {
	// AddGenerationPrompt ends the prompt with the opening of an assistant
	// turn ("<|im_start|>assistant\n" for Qwen).
	AddGenerationPrompt bool
	// EnableThinking is passed as enable_thinking when set. Qwen3's hybrid
	// template thinks unless it is false.
	EnableThinking *bool
	// Extra holds further template variables (e.g. reasoning_effort); each
	// value must marshal to JSON.
	Extra map[string]any
}

// Load reads the chat template of a model directory: chat_template.jinja
// when present (it takes precedence, as in transformers), else
// tokenizer_config.json's chat_template (a string, or a list of named
// templates).
func Load(dir string) (*Template, error) {
	cfgPath := filepath.Join(dir, ConfigFile)
	cfgData, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		Pad          json.RawMessage `json:"pad_token"`
		Unk          json.RawMessage `json:"unk_token"`
	}
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return nil, fmt.Errorf("chat template: %s is not JSON: %w", cfgPath, err)
	}
	special := map[string]string{}
	for key, raw := range map[string]json.RawMessage{"bos_token": cfg.BOS, "eos_token": cfg.EOS, "pad_token": cfg.Pad, "unk_token": cfg.Unk} {
		name, err := tokenizer.TokenName(raw)
		if err != nil {
			return nil, fmt.Errorf("chat template: %s: %s: %w", cfgPath, key, err)
		}
		if name != "" {
			special[key] = name
		}
	}
	sources := map[string]string{}
	if data, err := os.ReadFile(filepath.Join(dir, TemplateFile)); err == nil {
		sources[""] = string(data)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chat template: %w", err)
	} else {
		var one string
		var many []struct{ Name, Template string }
		switch {
		case len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null":
			return nil, fmt.Errorf("chat template: neither %s nor a chat_template in %s", TemplateFile, cfgPath)
		case json.Unmarshal(cfg.ChatTemplate, &one) == nil:
			sources[""] = one
		case json.Unmarshal(cfg.ChatTemplate, &many) == nil:
			for _, t := range many {
				name := t.Name
				if name == "default" {
					name = ""
				}
				sources[name] = t.Template
			}
		default:
			return nil, fmt.Errorf("chat template: %s: chat_template is neither a string nor a list of {name, template}", cfgPath)
		}
	}
	t, err := compileAll(sources, special)
	if err != nil {
		return nil, fmt.Errorf("chat template: %s: %w", dir, err)
	}
	return t, nil
}

// New compiles a template source. special gives bos_token, eos_token, … .
func New(source string, special map[string]string) (*Template, error) {
	return compileAll(map[string]string{"": source}, special)
}

func compileAll(sources map[string]string, special map[string]string) (*Template, error) {
	t := &Template{named: map[string]*jinja.Template{}, special: special}
	for name, src := range sources {
		pre, err := preprocess(src)
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", name, err)
		}
		c, err := jinja.Compile(pre)
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", name, err)
		}
		if name == "" {
			t.def = c
		} else {
			t.named[name] = c
		}
	}
	if t.def == nil {
		return nil, errors.New("no default template")
	}
	return t, nil
}

// Render renders messages and tools (nil for none) as apply_chat_template
// with tokenize=False does.
func (t *Template) Render(messages []Message, tools []json.RawMessage, opts Options) (string, error) {
	if len(messages) == 0 {
		return "", errors.New("render: no messages")
	}
	data := make(map[string]jinja.Value, 8+len(opts.Extra)+len(t.special))
	for k, v := range t.special {
		data[k] = jinja.NewString(v)
	}
	for k, v := range opts.Extra {
		val, err := goToValue(v)
		if err != nil {
			return "", fmt.Errorf("render: option %s: %w", k, err)
		}
		data[k] = val
	}
	var err error
	if data["messages"], err = messagesValue(messages); err != nil {
		return "", fmt.Errorf("render: messages: %w", err)
	}
	if data["tools"], err = toolsValue(tools); err != nil {
		return "", fmt.Errorf("render: tools: %w", err)
	}
	data["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	if opts.EnableThinking != nil {
		data["enable_thinking"] = jinja.NewBool(*opts.EnableThinking)
	}
	tmpl := t.def
	if named, ok := t.named["tool_use"]; ok && tools != nil {
		tmpl = named
	}
	out, err := execute(tmpl, data)
	if err != nil {
		return "", fmt.Errorf("render: %w", err)
	}
	return out, nil
}

// execute renders a compiled template with the functions the preprocessed
// source calls.
func execute(tmpl *jinja.Template, data map[string]jinja.Value) (string, error) {
	data[tojsonFunc] = jinja.NewCallable(tojsonFunc, pyTojson)
	return tmpl.RenderValues(data)
}

// Special returns the special-token names the template is given
// (bos_token, eos_token, pad_token, unk_token).
func (t *Template) Special() map[string]string {
	out := make(map[string]string, len(t.special))
	for k, v := range t.special {
		out[k] = v
	}
	return out
}
