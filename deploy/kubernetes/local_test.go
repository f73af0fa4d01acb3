package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/ackcheck/ackcheck/cluster"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
)

// localLoad is what replaces the manifests' load for a test: the
// rate (msg/s, all shards) and its length.
const (
	localRate     = 4000
	localDuration = 5 * time.Second
)

// buildAckcheck builds the binary the container image holds.
func buildAckcheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ackcheck")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/ackcheck/ackcheck/cmd/ackcheck")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ackcheck: %v\n%s", err, out)
	}
	return bin
}

// podCommand is container c's command with env applied as Kubernetes
// applies it ($(VAR) from the container's env, then the overrides), the
// volume's mount path moved to volume, and the binary at bin.
func podCommand(t *testing.T, c corev1.Container, bin, volume string, over map[string]string) (*exec.Cmd, []string) {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Fatalf("env %s comes from the cluster (valueFrom): give it a value the test can set", e.Name)
		}
		env[e.Name] = e.Value
	}
	for k, v := range over {
		env[k] = v
	}
	mount := c.VolumeMounts[0].MountPath
	var args []string
	for _, a := range c.Command[1:] {
		a = expand(a, env)
		if strings.Contains(a, "$(") {
			t.Fatalf("argument %q refers to a variable neither the manifest nor Kubernetes sets", a)
		}
		args = append(args, strings.ReplaceAll(a, mount+"/", volume+"/"))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd, args
}

func runLocally(t *testing.T, clusterDir string) {
	k, err := kafka.OpenCluster(kafka.ClusterOptions{Options: cluster.Options{Dir: clusterDir}})
	if err != nil {
		t.Fatal(err)
	}
	brokers := strings.Join(k.Brokers(), ",")
	m := decodeAll(t, ".")
	bin := buildAckcheck(t)
	volume := t.TempDir()
	n := int(*m.shards.Spec.Completions)
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	over := map[string]string{
		"BROKERS": brokers, "TOPIC": "k8s-shards-" + stamp, "RUN": "run-" + stamp,
		"RATE": strconv.Itoa(localRate), "DURATION": localDuration.String(), "START_LEAD": "30s",
		"METRICS_ADDR": "127.0.0.1:0",
	}

	// The Indexed Job: N pods, each with its completion index.
	sc := container(t, m.shards)
	type proc struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	procs := make([]*proc, n)
	for i := range n {
		o := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		for k, v := range over {
			o[k] = v
		}
		cmd, args := podCommand(t, sc, bin, volume, o)
		if i == 0 {
			t.Logf("shard command: ackcheck %s", strings.Join(args, " "))
		}
		p := &proc{cmd: cmd}
		cmd.Stdout, cmd.Stderr = &p.out, &p.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, p.out.String())
		}
	}

	// The verify Job, after it.
	verify := func() (int, verifier.Result) {
		cmd, args := podCommand(t, container(t, m.verify), bin, volume, over)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("ackcheck %s: exit %d\n%s", strings.Join(args, " "), code, out)
		merged, _ := flagValue(args, "out")
		var res verifier.Result
		data, err := os.ReadFile(filepath.Join(merged, "result.json"))
		if err != nil {
			t.Fatalf("verify wrote no result.json: %v", err)
		}
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(merged, "junit.xml")); err != nil {
			t.Fatalf("verify wrote no JUnit: %v", err)
		}
		return code, res
	}
	code, merged := verify()
	want := int64(localRate * localDuration.Seconds())
	if code != 0 || merged.Verdict != verifier.Pass || merged.Sent != want || merged.Acked != want || len(merged.Shards) != n {
		t.Fatalf("merged: exit %d, verdict %s, sent %d acked %d (want %d), %d shards", code, merged.Verdict, merged.Sent, merged.Acked, want, len(merged.Shards))
	}

	// One process of the same total rate, the same command otherwise.
	singleOut := filepath.Join(t.TempDir(), "single")
	single := exec.Command(bin, "run", "--driver=kafka", "--brokers="+brokers, "--topic=k8s-single-"+stamp, "--partitions=16",
		"--replication-factor=3", "--rate="+strconv.Itoa(localRate), "--duration="+localDuration.String(), "--message-size=1024",
		"--acks=all", "--out="+singleOut)
	if out, err := single.CombinedOutput(); err != nil {
		t.Fatalf("single process: %v\n%s", err, out)
	}
	var one verifier.Result
	data, _ := os.ReadFile(filepath.Join(singleOut, "result.json"))
	if err := json.Unmarshal(data, &one); err != nil {
		t.Fatal(err)
	}
	if one.Verdict != merged.Verdict || one.Sent != merged.Sent || one.Acked != merged.Acked || one.Lost != merged.Lost {
		t.Fatalf("single process: %s sent %d acked %d lost %d; merged shards: %s sent %d acked %d lost %d",
			one.Verdict, one.Sent, one.Acked, one.Lost, merged.Verdict, merged.Sent, merged.Acked, merged.Lost)
	}
	t.Logf("single: %s sent %d acked %d, publish p99 %.1f ms; merged %d shards: %s sent %d acked %d, publish p99 %.1f ms",
		one.Verdict, one.Sent, one.Acked, one.Publish.P99, n, merged.Verdict, merged.Sent, merged.Acked, merged.Publish.P99)

	// Records deleted from the topic: lost, counted per shard as the
	// shards' own ledgers say they were acked.
	const cut = 100
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: over["TOPIC"], Partition: 3, At: cut})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if rs, err := kadm.NewClient(cl).DeleteRecords(ctx, offs); err != nil || rs.Error() != nil {
		t.Fatalf("delete records: %v %v", err, rs.Error())
	}
	expect := make([]int64, n)
	for i := range n {
		l, err := ledger.OpenReadOnly(runner.LedgerDir(filepath.Join(volume, over["RUN"], fmt.Sprintf("shard-%d", i))), ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		expect[i], err = l.Count(ctx, ledger.Outcome, func(e ledger.Event) bool {
			return e.Status == ledger.OutcomeAcked && e.Partition == 3 && e.Offset < cut
		})
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	code, after := verify()
	if code != 1 || after.Verdict != verifier.Fail || after.Lost != cut {
		t.Fatalf("after deleting %d records: exit %d, verdict %s, lost %d", cut, code, after.Verdict, after.Lost)
	}
	for i, s := range after.Shards {
		if s.Lost != expect[i] {
			t.Fatalf("shard %d: %d lost, its ledger acked %d of the deleted records (all: %v)", i, s.Lost, expect[i], expect)
		}
	}
	t.Logf("deleted %d records of partition 3: lost per shard %v, as the ledgers' acks say", cut, expect)
}
