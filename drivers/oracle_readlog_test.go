package drivers

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLog(t *testing.T) {
	lines := func(log io.Reader) (int, error) {
		b, err := io.ReadAll(log)
		return strings.Count(string(b), "\n"), err
	}
	n, err := ReadLog(FetchedLogs(map[int32][]byte{2: []byte("a\nb\n")}), 2, lines)
	if err != nil || n != 2 {
		t.Fatalf("fetched log: %d lines, err %v; want 2, nil", n, err)
	}
	if _, err := ReadLog(FetchedLogs(nil), 3, lines); err == nil || !strings.Contains(err.Error(), "node 3") {
		t.Fatalf("a log not fetched: err %v, want one naming node 3", err)
	}

	dir := t.TempDir()
	file := func(node int32) string { return filepath.Join(dir, "node.log") }
	if _, err := ReadLog(LocalLogs(file), 1, lines); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing local log: err %v, want not exist", err)
	}
	if err := os.WriteFile(file(1), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := ReadLog(LocalLogs(file), 1, lines); err != nil || n != 1 {
		t.Fatalf("local log: %d lines, err %v; want 1, nil", n, err)
	}
	bad := errors.New("parse")
	_, err = ReadLog(LocalLogs(file), 1, func(io.Reader) (int, error) { return 0, bad })
	if !errors.Is(err, bad) || !strings.Contains(err.Error(), "node 1's log") {
		t.Fatalf("a parser error: %v, want it wrapped with the node", err)
	}
}
