package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/internal/mdcheck"
)

// runnableInfo marks a fenced block of README.md or docs/*.md that
// TestDocsRunnableBlocks runs: ```sh runnable. Such a block holds
// commands only (no output), runs with bash -e -o pipefail in a
// directory of its own file (the blocks of one file run in order, in the
// same directory, so a verify can follow its run), with this ackcheck
// first on PATH. Where it names the broker 127.0.0.1:9092, it gets an
// in-process kfake's address instead: the one substitution made, so what
// runs is what the page says. A block that needs a real cluster is not
// marked.
const runnableInfo = "sh runnable"

// block is a runnable block: where it starts (1-based line of its fence)
// and its text.
type block struct {
	line int
	text string
}

// runnableBlocks returns md's runnable blocks, in order. An unclosed
// runnable block is an error (it would run the rest of the page).
func runnableBlocks(md []byte) ([]block, error) {
	var out []block
	var cur *block
	var fence string
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && strings.HasPrefix(trimmed, "```"):
			fence = "```"
			if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == runnableInfo {
				cur = &block{line: n}
			}
		case fence != "" && trimmed == fence:
			fence = ""
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: a runnable block is not closed", cur.line)
	}
	return out, nil
}

// docPages are README.md and docs/*.md, from this package's directory.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, pages...)
}

func TestRunnableBlocksFound(t *testing.T) {
	md := "# x\n\n```sh runnable\nackcheck --version\n```\n\n```\nnot run\n```\n\n```sh\nnot run either\n```\n\n```sh runnable\n# two\nackcheck scenario list\nackcheck scenario show kafka/leader-kill\n```\n"
	got, err := runnableBlocks([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].line != 3 || got[0].text != "ackcheck --version\n" || got[1].line != 15 || !strings.HasSuffix(got[1].text, "show kafka/leader-kill\n") {
		t.Errorf("blocks %+v", got)
	}
	if _, err := runnableBlocks([]byte("```sh runnable\nackcheck --version\n")); err == nil {
		t.Errorf("an unclosed runnable block is not an error")
	}
}

// runBlock runs one block as TestDocsRunnableBlocks does.
func runBlock(ctx context.Context, b block, dir, path, brokers string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", strings.ReplaceAll(b.text, "127.0.0.1:9092", brokers))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd.CombinedOutput()
}

// Every runnable block of the README and docs/ runs and exits 0, and
// every Markdown table there renders (GFM, as GitHub parses it).
func TestDocsRunnableBlocks(t *testing.T) {
	bin := binary(t)
	c := kfakeCluster(t)
	brokers := strings.Join(c.ListenAddrs(), ",")
	total := 0
	for _, page := range docPages(t) {
		md, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(page, "../../")
		for _, err := range mdcheck.Tables(md) {
			t.Errorf("%s: %v", name, err)
		}
		blocks, err := runnableBlocks(md)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "README.md" && len(blocks) == 0 {
			t.Errorf("README.md has no runnable block: its commands are checked by nothing")
		}
		total += len(blocks)
		dir := t.TempDir()
		for _, b := range blocks {
			out, err := runBlock(context.Background(), b, dir, filepath.Dir(bin), brokers)
			if err != nil {
				t.Errorf("%s:%d: the runnable block failed: %v\n%s\n--- output:\n%s", name, b.line, err, b.text, out)
			}
		}
	}
	t.Logf("%d runnable blocks ran", total)
	if total < 5 {
		t.Errorf("%d runnable blocks in README.md and docs/, want at least 5", total)
	}
}

// A block that fails is reported: the check can fire.
func TestDocsRunnableBlockFails(t *testing.T) {
	for _, tt := range []struct {
		text string
		ok   bool
	}{{"true\n", true}, {"false\ntrue\n", false}, {"false | true\n", false}, {"exit 2\n", false}} {
		_, err := runBlock(context.Background(), block{text: tt.text}, t.TempDir(), t.TempDir(), "127.0.0.1:1")
		if (err == nil) != tt.ok {
			t.Errorf("block %q: error %v, want ok %v", tt.text, err, tt.ok)
		}
	}
}
