package kubernetes

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// No container engine runs on the machines that test this project, so
// the image itself is never built here (docs/scale-out.md). What can be
// checked without one is checked against the Dockerfile's own text: its
// build command, run as written, makes a static binary (no ELF
// interpreter, no shared library needed), the binary runs as the user
// the Dockerfile names and not as root, and every Job runs as that user.
func TestImageBuildAsTheDockerfileSays(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(df)

	run := regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build .* -o /out/ackcheck \./cmd/ackcheck$`).FindStringSubmatch(text)
	if run == nil {
		t.Fatalf("the Dockerfile has no `RUN CGO_ENABLED=0 go build ... -o /out/ackcheck ./cmd/ackcheck` line: the image this test stands for is built by it; keep them in step")
	}
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(text)
	if user == nil {
		t.Fatal("the Dockerfile names no numeric USER uid:gid: the image must not run as root")
	}
	uid, _ := strconv.Atoi(user[1])
	gid, _ := strconv.Atoi(user[2])
	if uid == 0 {
		t.Fatal("the Dockerfile's USER is root")
	}
	if !strings.Contains(text, "FROM gcr.io/distroless/static") {
		t.Error("the final stage is not distroless/static: a static binary is what it can run, nothing else is there")
	}

	// The binary as the image's build line makes it: CGO_ENABLED=0 is
	// what makes it static; the line's -trimpath and -ldflags="-s -w"
	// change paths and symbols, not the linking, and building with them
	// would compile every package again (about 100 s here) for nothing
	// more. buildAckcheck is the build TestManifestsRunLocally runs too.
	bin := buildAckcheck(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil { // the image's user must reach the binary
		t.Fatal(err)
	}
	for d := filepath.Dir(filepath.Dir(bin)); d != "/" && d != "."; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(d, fi.Mode().Perm()|0o011) //nolint:errcheck // a test temp dir: only for the run as the image's user
		}
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for an ELF interpreter (dynamically linked): distroless/static has no libc to give it")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}

	if os.Geteuid() == 0 {
		help := exec.Command(bin, "run", "--help")
		help.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		help.Env = []string{"HOME=/nonexistent"} // distroless gives no home a user can write
		if out, err := help.CombinedOutput(); err != nil || !strings.Contains(string(out), "--rate") {
			t.Errorf("as uid %d, `ackcheck run --help`: %v\n%s", uid, err, out)
		}
	} else {
		t.Logf("not root: the run as uid %d is not tried", uid)
	}

	m := decodeAll(t, ".")
	for _, j := range []struct {
		name string
		sc   *int64
		non  *bool
	}{
		{"shards", m.shards.Spec.Template.Spec.SecurityContext.RunAsUser, m.shards.Spec.Template.Spec.SecurityContext.RunAsNonRoot},
		{"verify", m.verify.Spec.Template.Spec.SecurityContext.RunAsUser, m.verify.Spec.Template.Spec.SecurityContext.RunAsNonRoot},
		{"faults", m.faults.Spec.Template.Spec.SecurityContext.RunAsUser, m.faults.Spec.Template.Spec.SecurityContext.RunAsNonRoot},
	} {
		if j.sc == nil || *j.sc != int64(uid) || j.non == nil || !*j.non {
			t.Errorf("the %s Job does not run as the image's user %d with runAsNonRoot", j.name, uid)
		}
	}
}
