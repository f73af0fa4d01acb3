package report

import (
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
)

// Screenshot renders an HTML file to a PNG with headless Chromium (the
// binary named chromium on PATH, as Debian installs it), offline: the
// flags keep Chromium from reaching any network.
func Screenshot(ctx context.Context, page, pngPath string, width, height int) error {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return fmt.Errorf("chromium not found: apt-get install chromium: %w", err)
	}
	profile, err := os.MkdirTemp("", "ackcheck-chromium-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	abs, err := filepath.Abs(page)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+pngPath, "file://"+abs)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chromium: %w\n%s", err, out)
	}
	return nil
}

// Inked reports how much a PNG shows: distinct colours and the share of
// sampled pixels that are not white. A blank page has 1 colour and 0.
func Inked(pngPath string) (colors int, nonWhite float64, err error) {
	f, err := os.Open(pngPath)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return 0, 0, err
	}
	seen := map[uint32]bool{}
	b := img.Bounds()
	var n, inked int
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				inked++
			}
		}
	}
	return len(seen), float64(inked) / float64(max(n, 1)), nil
}
