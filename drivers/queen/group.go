package queen

// Consumer groups (drivers.GroupConsumer) on Queen's own: a member pops
// from the queue with consumerGroup=<group>, which leases the partitions
// it was given to that pop (one member at a time per partition and
// group), and acks what it processed with POST /api/v1/ack/batch.
//
// How the Kafka-shaped seam maps onto Queen:
//
//   - A delivery's position is the message's index in its partition's
//     (created_at, id) order, as read.go numbers the rows the read-back
//     sees, so that a delivery and the record read back agree. The pop's
//     answer carries no position: it is counted in the database.
//   - Commit(next) acks, with the pop's lease, every record the member
//     was delivered below next[p]. Queen's group cursor is the last
//     message acked (ack_messages_v2 moves it to each acked message in
//     (created_at, id) order), and a pop gives the rows after the cursor,
//     so once every record below next is acked the group's position is
//     next: the answer's Offset. An ack Queen refuses (its lease expired
//     and the partition was popped again) makes the partition's answer an
//     error: nothing is claimed for it.
//   - Close sends nothing: the member's leases expire after the queue's
//     lease time and the next pop of the group is given, again, what it
//     had not acked. Queues the driver makes have GroupLease; an older
//     queue keeps its own (Queen's default is 300 s).
//   - The group's committed position (drivers.GroupOffsetReader) is
//     Queen's cursor in queen.partition_consumers, counted as an offset
//     the same way.
//
// Queen has no node that coordinates a group: every pop and ack is a
// statement on the one database, through the one server. So the driver
// has no drivers.GroupCoordinatorFinder, and coordinator:GROUP is
// refused on Queen; kill the server (node 1) or the database (node 2).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/jackc/pgx/v5"
)

// GroupLease is the lease time of the queues the driver makes: how long
// a pop holds its partitions for the group. A member that leaves without
// acking (Close, restart-consumers, a client that died) keeps them this
// long before Queen gives them to another pop; a member whose commit
// comes later than this finds its acks refused. 10 s is well past a
// member's poll-to-commit time (milliseconds) and keeps a redelivery
// quick.
const GroupLease = 10 * time.Second

// Pop parameters of a member: the most records one pop returns (across
// partitions), the most partitions it claims, and how long it waits on
// the server for records.
const (
	popBatch      = 500
	popWait       = time.Second
	popRetryPause = 250 * time.Millisecond
	// positionWait bounds how long the positions of a pop's records are
	// asked of a database that cannot answer now; then the poll fails and
	// the records, not acked, come back when their lease expires.
	positionWait = 30 * time.Second
)

// JoinGroup implements drivers.GroupConsumer. Queen has no membership:
// the member exists once it can pop, and the group once a pop claimed a
// partition for it. With spec.StartOffsets past a partition's start, a
// group that has no cursor yet begins at the earliest creation time of
// the rows at those offsets (Queen's subscriptionFrom, the one start it
// takes for every partition): it may be given rows before the start of
// other partitions, never fewer than from the start.
func (d *Driver) JoinGroup(ctx context.Context, spec drivers.GroupSpec) (drivers.GroupMember, error) {
	if spec.Group == "" || spec.Group == "__QUEUE_MODE__" {
		return nil, fmt.Errorf("group %q: give a consumer group name (Queen keeps __QUEUE_MODE__ for pops without a group)", spec.Group)
	}
	n, err := d.partitionCount(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	m := &member{d: d, group: spec.Group, topic: spec.Topic, parts: n, pending: map[int32][]popped{}}
	from, err := d.subscriptionFrom(ctx, spec.Topic, spec.StartOffsets)
	if err != nil {
		return nil, fmt.Errorf("group %s: where to begin: %w", spec.Group, err)
	}
	if !from.IsZero() {
		m.from = from.UTC().Format(time.RFC3339Nano)
	}
	return m, nil
}

// subscriptionFrom is the earliest created_at of the rows at offsets
// (zero when every offset is 0 or past its partition's end).
func (d *Driver) subscriptionFrom(ctx context.Context, topic string, offsets map[int32]int64) (time.Time, error) {
	var from time.Time
	for p, off := range offsets {
		if off <= 0 {
			continue
		}
		var at time.Time
		err := d.db.QueryRow(ctx, `SELECT m.created_at FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2 ORDER BY m.created_at, m.id OFFSET $3 LIMIT 1`,
			topic, partitionName(p), off).Scan(&at)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return time.Time{}, d.dbErr(fmt.Sprintf("find row %d of %s/%s", off, topic, partitionName(p)), err)
		}
		if from.IsZero() || at.Before(from) {
			from = at
		}
	}
	return from, nil
}

// member is one member of a Queen consumer group. Used by one goroutine
// (drivers.GroupMember).
type member struct {
	d            *Driver
	group, topic string
	parts        int
	from         string // subscriptionFrom for a group without a cursor; "" from the start
	// pending is what the member was delivered and has not acked, per
	// partition, in offset order.
	pending map[int32][]popped
}

// popped is one delivered record, as an ack names it.
type popped struct {
	off                        int64
	txID, partitionID, leaseID string
}

// popMessage is one message of a pop's answer.
type popMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       string          `json:"leaseId"`
	Data          json.RawMessage `json:"data"`
}

// Poll implements drivers.GroupMember: a long-polling pop of the group,
// repeated until it gives records or ctx ends. A pop that fails (a
// server killed or restarting, a database it cannot reach) is asked
// again for up to pollFailing; a pop lost with its server leaves its
// partitions leased until their lease expires.
func (m *member) Poll(ctx context.Context) ([]drivers.Delivery, error) {
	var failing time.Time
	for {
		msgs, err := m.pop(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			if len(msgs) > 0 {
				return m.deliver(ctx, msgs, time.Now())
			}
			failing = time.Time{}
			continue
		}
		if failing.IsZero() {
			failing = time.Now()
		} else if time.Since(failing) > pollFailing {
			return nil, fmt.Errorf("every pop failed for %s: %w", pollFailing, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(popRetryPause):
		}
	}
}

// pollFailing is how long Poll asks again after pops that fail before it
// gives up.
const pollFailing = 30 * time.Second

// pop asks for the group's next records once.
func (m *member) pop(ctx context.Context) ([]popMessage, error) {
	q := url.Values{}
	q.Set("consumerGroup", m.group)
	q.Set("batch", strconv.Itoa(popBatch))
	q.Set("partitions", strconv.Itoa(max(m.parts, 1)))
	q.Set("wait", "true")
	q.Set("timeout", strconv.Itoa(int(popWait/time.Millisecond)))
	if m.from != "" {
		q.Set("subscriptionFrom", m.from)
	}
	path := "/api/v1/pop/queue/" + url.PathEscape(m.topic) + "?" + q.Encode()
	pctx, cancel := context.WithTimeout(ctx, popWait+m.d.cfg.AttemptTimeout)
	defer cancel()
	var ans struct {
		Messages []popMessage `json:"messages"`
		Error    any          `json:"error"`
		Paused   bool         `json:"paused"`
	}
	raw, err := m.d.get(pctx, path)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, nil // 204: nothing came while the pop waited
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("pop %s for group %s: an answer that is not what Queen documents (%v): %s", m.topic, m.group, err, clip(raw))
	}
	switch e := ans.Error.(type) {
	case nil:
	case string:
		if e == "no_available_partition" {
			return nil, nil // every partition is leased or has nothing new
		}
		return nil, fmt.Errorf("pop %s for group %s: Queen answered %q", m.topic, m.group, e)
	default:
		return nil, fmt.Errorf("pop %s for group %s: Queen answered %v", m.topic, m.group, e)
	}
	return ans.Messages, nil
}

// get is a GET whose body is returned as it is, whatever the status:
// a pop's answer carries "error" for an empty pop, and is empty with
// 204, both of which call would take for a failure.
func (d *Driver) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.cfg.URL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w: %w", path, drivers.ErrUnreachable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w: read the answer: %w", path, drivers.ErrUnreachable, err)
	}
	if resp.StatusCode >= 400 && len(data) == 0 {
		return nil, fmt.Errorf("GET %s: Queen answered %d", path, resp.StatusCode)
	}
	return data, nil
}

// deliver numbers a pop's messages and keeps them as pending.
func (m *member) deliver(ctx context.Context, msgs []popMessage, at time.Time) ([]drivers.Delivery, error) {
	byPart := map[string][]popMessage{}
	for _, msg := range msgs {
		byPart[msg.PartitionID] = append(byPart[msg.PartitionID], msg)
	}
	var out []drivers.Delivery
	for pid, ms := range byPart {
		part, ok := partitionIndex(ms[0].Partition)
		if !ok {
			return nil, fmt.Errorf("pop %s for group %s: partition %q is not one ackcheck names (p0, p1, ...)", m.topic, m.group, ms[0].Partition)
		}
		offs, err := retry(ctx, positionWait, func() (map[string]int64, error) { return m.d.positions(ctx, pid, ms) })
		if err != nil {
			return nil, fmt.Errorf("pop %s for group %s: the positions of %d records of %s: %w", m.topic, m.group, len(ms), ms[0].Partition, err)
		}
		for _, msg := range ms {
			off, ok := offs[msg.ID]
			if !ok {
				return nil, fmt.Errorf("pop %s for group %s: message %s of %s is not in the database", m.topic, m.group, msg.ID, ms[0].Partition)
			}
			out = append(out, drivers.Delivery{Pos: drivers.Position{Partition: part, Offset: off}, Value: payload(msg.Data), At: at})
			m.pending[part] = append(m.pending[part], popped{off: off, txID: msg.TransactionID, partitionID: msg.PartitionID, leaseID: msg.LeaseID})
		}
		sort.Slice(m.pending[part], func(i, j int) bool { return m.pending[part][i].off < m.pending[part][j].off })
	}
	return out, nil
}

// payload is a pop's data as the value the driver pushed: the base64
// string it sent, decoded; anything else (a foreign message) as its JSON
// text, as the read-back hands it on.
func payload(data json.RawMessage) []byte {
	var s string
	if json.Unmarshal(data, &s) != nil {
		return []byte(data)
	}
	if v, err := base64.StdEncoding.DecodeString(s); err == nil {
		return v
	}
	return []byte(s)
}

// positions numbers messages of one partition, given in (created_at, id)
// order as a pop returns them: each one's index in the partition's
// (created_at, id) order (read.go's offsets), counted in the database.
// The rows from the first to the last are counted once, so a pop costs
// one count up to its first row.
func (d *Driver) positions(ctx context.Context, partitionID string, ms []popMessage) (map[string]int64, error) {
	rows, err := d.db.Query(ctx, `WITH f AS (SELECT created_at, id FROM queen.messages WHERE id = $2::uuid),
		l AS (SELECT created_at, id FROM queen.messages WHERE id = $3::uuid),
		b AS (SELECT count(*) AS n FROM queen.messages x, f WHERE x.partition_id = $1::uuid AND (x.created_at, x.id) < (f.created_at, f.id))
		SELECT m.id::text, b.n + row_number() OVER (ORDER BY m.created_at, m.id) - 1
		FROM queen.messages m, f, l, b
		WHERE m.partition_id = $1::uuid AND (m.created_at, m.id) >= (f.created_at, f.id) AND (m.created_at, m.id) <= (l.created_at, l.id)
		ORDER BY m.created_at, m.id`, partitionID, ms[0].ID, ms[len(ms)-1].ID)
	if err != nil {
		return nil, d.dbErr("number popped messages", err)
	}
	out := map[string]int64{}
	var id string
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &off}, func() error { out[id] = off; return nil }); err != nil {
		return nil, d.dbErr("number popped messages", err)
	}
	return out, nil
}

// ackAnswer is one entry of POST /api/v1/ack/batch's answer.
type ackAnswer struct {
	Index   int    `json:"index"`
	Success bool   `json:"success"`
	Error   any    `json:"error"`
	TxID    string `json:"transactionId"`
}

// Commit implements drivers.GroupMember: one ack batch, with each pop's
// lease, of every pending record below next[p]. A partition's answer is
// acknowledged when Queen acked every one of them; a partition the
// member was delivered nothing below next for has nothing to ack and
// answers an error. The batch is sent again while the server does not
// answer and ctx lasts (an ack Queen applied twice moves the cursor to
// the same message).
func (m *member) Commit(ctx context.Context, next map[int32]int64) ([]drivers.CommitAnswer, error) {
	type ack struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
		Status        string `json:"status"`
	}
	var acks []ack
	var whose []int32 // the partition of each ack
	answers := map[int32]*drivers.CommitAnswer{}
	parts := make([]int32, 0, len(next))
	for p := range next {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		answers[p] = &drivers.CommitAnswer{Partition: p, Offset: next[p]}
		var keep []popped
		n := 0
		for _, r := range m.pending[p] {
			if r.off >= next[p] {
				keep = append(keep, r)
				continue
			}
			acks = append(acks, ack{TransactionID: r.txID, PartitionID: r.partitionID, LeaseID: r.leaseID, Status: "completed"})
			whose = append(whose, p)
			n++
		}
		m.pending[p] = keep
		if n == 0 {
			answers[p].Err = fmt.Errorf("member of group %s was delivered nothing of %s below offset %d to ack", m.group, partitionName(p), next[p])
		}
	}
	if len(acks) > 0 {
		body := map[string]any{"consumerGroup": m.group, "acknowledgments": acks}
		var res []ackAnswer
		for {
			actx, cancel := context.WithTimeout(ctx, m.d.cfg.AttemptTimeout)
			err := m.d.call(actx, http.MethodPost, "/api/v1/ack/batch", body, &res)
			cancel()
			if err == nil {
				break
			}
			if !errors.Is(err, drivers.ErrUnreachable) || ctx.Err() != nil {
				return nil, fmt.Errorf("ack %d records of group %s: %w", len(acks), m.group, err)
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("ack %d records of group %s: %w (last: %v)", len(acks), m.group, ctx.Err(), err)
			case <-time.After(popRetryPause):
			}
		}
		if len(res) != len(acks) {
			return nil, fmt.Errorf("ack %d records of group %s: Queen answered %d entries", len(acks), m.group, len(res))
		}
		for i, r := range res {
			idx := i
			if r.Index >= 0 && r.Index < len(acks) {
				idx = r.Index
			}
			if a := answers[whose[idx]]; !r.Success && a.Err == nil {
				a.Err = fmt.Errorf("Queen refused the ack of %s in %s for group %s: %v", r.TxID, partitionName(a.Partition), m.group, r.Error)
			}
		}
	}
	out := make([]drivers.CommitAnswer, 0, len(parts))
	for _, p := range parts {
		out = append(out, *answers[p])
	}
	return out, nil
}

// Close implements drivers.GroupMember: it acks nothing and releases
// nothing; the leases of what the member holds expire (GroupLease on the
// driver's queues) and the group is given those records again.
func (m *member) Close(ctx context.Context) error {
	m.pending = map[int32][]popped{}
	return nil
}

// CommitPromise implements drivers.GroupConsumer: an ack is an update of
// the group's cursor that PostgreSQL committed before the server
// answered, so what it survives is PostgreSQL's fsync and
// synchronous_commit. Durable when both make the commit's WAL fsynced
// before the answer: it then survives a crash or power loss of the
// database (the one copy there is; a lost disk is not covered).
func (d *Driver) CommitPromise(ctx context.Context, group string) (drivers.CommitPromise, error) {
	fsync, sync, err := d.pgSync(ctx)
	if err != nil {
		return drivers.CommitPromise{}, err
	}
	return commitPromise(fsync, sync), nil
}

// commitPromise says what an ack means under PostgreSQL's fsync and
// synchronous_commit.
func commitPromise(fsync, syncCommit string) drivers.CommitPromise {
	head := fmt.Sprintf("an ack is a cursor update committed by the one PostgreSQL (fsync=%s, synchronous_commit=%s)", fsync, syncCommit)
	switch {
	case commitFsynced(fsync, syncCommit):
	case fsync != "on":
		return drivers.CommitPromise{Meaning: head + ", never fsynced: a power loss of the database can lose it"}
	default:
		return drivers.CommitPromise{Meaning: head + ", answered before its WAL was fsynced: a power loss of the database can lose it"}
	}
	return drivers.CommitPromise{Meaning: head + ", its WAL fsynced before the answer", Durable: true}
}

// CommittedOffsets implements drivers.GroupOffsetReader: Queen's own
// cursor of the group per partition (queen.partition_consumers: the last
// message acked), as the offset after it, counted in the database the
// way read.go numbers rows. A partition the group never acked in is
// missing.
func (d *Driver) CommittedOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	return retry(ctx, 15*time.Second, func() (map[int32]int64, error) {
		rows, err := d.db.Query(ctx, `SELECT p.name, (SELECT count(*) FROM queen.messages m WHERE m.partition_id = p.id
				AND (m.created_at, m.id) <= (pc.last_consumed_created_at, pc.last_consumed_id))
			FROM queen.partition_consumers pc JOIN queen.partitions p ON p.id = pc.partition_id JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = $1 AND pc.consumer_group = $2 AND pc.last_consumed_created_at IS NOT NULL
			  AND pc.last_consumed_id <> '00000000-0000-0000-0000-000000000000'::uuid`, topic, group)
		if err != nil {
			return nil, d.dbErr("read the cursors of group "+group, err)
		}
		out := map[int32]int64{}
		var name string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
			if p, ok := partitionIndex(name); ok {
				out[p] = n
			}
			return nil
		})
		if err != nil {
			return nil, d.dbErr("read the cursors of group "+group, err)
		}
		return out, nil
	})
}
