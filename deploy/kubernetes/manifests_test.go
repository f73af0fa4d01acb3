// Package kubernetes holds no code: its test checks the manifests beside
// it (issue 27, points 4 and 5). Every manifest is decoded strictly with
// the Kubernetes API types (an unknown or misspelt field fails), the
// Indexed Job's wiring is checked (index, shard count, run directories,
// volume, metrics port), and, against a real local Kafka
// (ACKCHECK_KAFKA_CLUSTER_DIR), the containers' exact commands and env
// are run as local processes, with one temporary directory standing in
// for the volume.
package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the decoded objects of this directory.
type manifests struct {
	shards, verify, faults *batchv1.Job
	pvc                    *corev1.PersistentVolumeClaim
	svc                    *corev1.Service
}

// decodeAll decodes every YAML file in dir strictly into the API type its
// kind names; a kind without a type here fails, as does a second object
// of a kind the test knows only one of.
func decodeAll(t *testing.T, dir string) manifests {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	var m manifests
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "batch/v1 Job":
			j := &batchv1.Job{}
			obj = j
			switch {
			case strings.Contains(f, "shards"):
				m.shards = j
			case strings.Contains(f, "faults"):
				m.faults = j
			default:
				m.verify = j
			}
		case "v1 PersistentVolumeClaim":
			m.pvc = &corev1.PersistentVolumeClaim{}
			obj = m.pvc
		case "v1 Service":
			m.svc = &corev1.Service{}
			obj = m.svc
		default:
			t.Fatalf("%s: kind %q %q has no API type in this test", f, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			t.Fatalf("%s does not decode strictly as %s: %v", f, tm.Kind, err)
		}
	}
	if m.shards == nil || m.verify == nil || m.faults == nil || m.pvc == nil || m.svc == nil {
		t.Fatalf("want the shards' Job, the verify Job, the faults Job, a PVC and a Service, got %+v", m)
	}
	return m
}

// The strict decoder refuses what Kubernetes would refuse or silently
// drop: a misspelt field.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("job-shards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "completionMode: Indexed", "completionMode: Indexed\n  completionsMode: Indexed", 1)
	if bad == string(data) {
		t.Fatal("job-shards.yaml has no completionMode line to misspell")
	}
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(bad), &j); err == nil || !strings.Contains(err.Error(), "completionsMode") {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
	_ = dir
}

func container(t *testing.T, j *batchv1.Job) corev1.Container {
	t.Helper()
	cs := j.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("job %s: want one container, got %d", j.Name, len(cs))
	}
	return cs[0]
}

// flagValue is the value of --name=value in args ("" and false if absent).
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

// The shards' Job is an Indexed Job whose N pods each run one shard of
// N (index from JOB_COMPLETION_INDEX), into a run directory of its own
// on the shared volume, which the verify Job's --shard-dir matches.
func TestIndexWiring(t *testing.T) {
	m := decodeAll(t, ".")
	j := m.shards.Spec
	if j.CompletionMode == nil || *j.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed", j.CompletionMode)
	}
	if j.Completions == nil || j.Parallelism == nil || *j.Completions != *j.Parallelism {
		t.Fatalf("completions %v, parallelism %v: want both set and equal (every shard runs at once)", ptrText(j.Completions), ptrText(j.Parallelism))
	}
	n := int(*j.Completions)
	c := container(t, m.shards)
	args := c.Command
	if args[0] != "ackcheck" || args[1] != "run" {
		t.Fatalf("command %v, want ackcheck run", args)
	}
	if v, _ := flagValue(args, "shard"); v != fmt.Sprintf("auto/%d", n) {
		t.Fatalf("--shard %q, want auto/%d (completions)", v, n)
	}
	out, _ := flagValue(args, "out")
	if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Fatalf("--out %q: each shard needs its own run directory, named by its index", out)
	}
	if sd, ok := flagValue(args, "start-dir"); !ok || strings.Contains(sd, "JOB_COMPLETION_INDEX") {
		t.Fatalf("--start-dir %q: every shard must meet at one directory", sd)
	}
	if m.shards.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("a shard restarted into its run directory would be refused: restartPolicy must be Never")
	}
	// The run directories are on the shared volume, the PVC's.
	for _, job := range []*batchv1.Job{m.shards, m.verify} {
		vols := job.Spec.Template.Spec.Volumes
		if len(vols) != 1 || vols[0].PersistentVolumeClaim == nil || vols[0].PersistentVolumeClaim.ClaimName != m.pvc.Name {
			t.Fatalf("job %s: volumes %+v, want the PVC %s", job.Name, vols, m.pvc.Name)
		}
		mounts := container(t, job).VolumeMounts
		if len(mounts) != 1 || mounts[0].Name != vols[0].Name || !strings.HasPrefix(out, mounts[0].MountPath+"/") {
			t.Fatalf("job %s: mounts %+v do not hold --out %s", job.Name, mounts, out)
		}
		if sc := job.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Fatalf("job %s does not run as non-root", job.Name)
		}
	}
	if !slices.Contains(m.pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Fatalf("PVC access modes %v: every shard's pod and the verify pod mount it, want ReadWriteMany", m.pvc.Spec.AccessModes)
	}
	// The verify Job reads every shard's directory of the same run.
	vc := container(t, m.verify)
	if vc.Command[0] != "ackcheck" || vc.Command[1] != "verify" {
		t.Fatalf("verify command %v", vc.Command)
	}
	glob, _ := flagValue(vc.Command, "shard-dir")
	if want := strings.Replace(out, "$(JOB_COMPLETION_INDEX)", "*", 1); glob != want {
		t.Fatalf("verify --shard-dir %q does not match the shards' --out %q (want %q)", glob, out, want)
	}
	r1, _ := envValue(c, "RUN")
	r2, _ := envValue(vc, "RUN")
	if r1 == "" || r1 != r2 {
		t.Fatalf("RUN %q in the shards' Job, %q in the verify Job: they must name one run", r1, r2)
	}
	// The optional faults Job meets the shards at their start directory,
	// for their N, topic and duration, on the same volume and run.
	fc := container(t, m.faults)
	if fc.Command[0] != "ackcheck" || fc.Command[1] != "faults" {
		t.Fatalf("faults command %v", fc.Command)
	}
	shardEnv, faultEnv := map[string]string{}, map[string]string{}
	for _, e := range c.Env {
		shardEnv[e.Name] = e.Value
	}
	for _, e := range fc.Env {
		faultEnv[e.Name] = e.Value
	}
	for _, f := range []string{"start-dir", "topic", "duration", "start-lead", "brokers", "driver"} {
		a, _ := flagValue(args, f)
		b, ok := flagValue(fc.Command, f)
		if !ok || expand(a, shardEnv) != expand(b, faultEnv) {
			t.Fatalf("--%s: %q in the shards' Job, %q in the faults Job: they must be one load's", f, expand(a, shardEnv), expand(b, faultEnv))
		}
	}
	if v, _ := flagValue(fc.Command, "shards"); v != fmt.Sprint(n) {
		t.Fatalf("faults --shards %q, want %d (completions)", v, n)
	}
	if _, ok := flagValue(fc.Command, "fault"); !ok {
		t.Fatal("the faults Job gives no --fault")
	}
	sd, _ := flagValue(fc.Command, "start-dir")
	var onVolume bool
	for _, v := range m.faults.Spec.Template.Spec.Volumes {
		for _, mt := range fc.VolumeMounts {
			if mt.Name == v.Name && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == m.pvc.Name && strings.HasPrefix(sd, mt.MountPath+"/") {
				onVolume = true
			}
		}
	}
	if !onVolume {
		t.Fatalf("faults --start-dir %s is not on the PVC %s", sd, m.pvc.Name)
	}
	if sc := m.faults.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || m.faults.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("the faults Job must run as non-root and never restart")
	}
	// The Service reaches every shard pod's metrics port.
	labels := m.shards.Spec.Template.Labels
	for k, v := range m.svc.Spec.Selector {
		if labels[k] != v {
			t.Fatalf("service selector %v does not select the shard pods %v", m.svc.Spec.Selector, labels)
		}
	}
	addr, _ := envValue(c, "METRICS_ADDR")
	if a, _ := flagValue(args, "metrics-addr"); a != "$(METRICS_ADDR)" || len(c.Ports) != 1 ||
		addr != fmt.Sprintf(":%d", c.Ports[0].ContainerPort) || m.svc.Spec.Ports[0].TargetPort.String() != c.Ports[0].Name {
		t.Fatalf("metrics: --metrics-addr %q (METRICS_ADDR %q), container ports %+v, service ports %+v", a, addr, c.Ports, m.svc.Spec.Ports)
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) as Kubernetes does in a container's command: a
// reference to a variable the container does not define stays as it is.
func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := env[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// Issue 27, point 5: the manifests' exact commands and env, run as N
// local processes against a real local Kafka, one temporary directory
// standing in for the volume (its mount path replaced in the commands).
// Only the env values a real cluster would set differently are
// replaced: the brokers, the topic, a short load, a short lead, and a
// loopback metrics address per process. The merged verdict must be the
// one a single process of the same total rate gives, and records deleted
// from the topic afterwards must be found lost, counted against the
// shard that acked them.
func TestManifestsRunLocally(t *testing.T) {
	dir := os.Getenv("ACKCHECK_KAFKA_CLUSTER_DIR")
	if dir == "" {
		t.Skip("ACKCHECK_KAFKA_CLUSTER_DIR is not set (.ci/run starts a local Kafka)")
	}
	runLocally(t, dir)
}

func ptrText(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
