package redisstate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway-gw/spillway/internal/budget"
)

// Budget layout, under the prefix, per scope ("org:acme"):
//
//	b:<scope>    hash: spent, day, today (settled), held (open holds)
//	bh:<scope>   sorted set: open hold ids by expiry (ms)
//	bha:<scope>  hash: hold id -> amount held
//	br:<scope>   hash: r<sec> requests and t<sec> tokens of the last 60 s
//
// One script checks every gate of every scope and, only if all pass, holds
// and counts: all or nothing, atomically for every replica. A hold a dead
// replica never settled is given back when it expires (budget.HoldTTL).
// b: is seeded from the replica's own figures when missing (a fresh or
// emptied Redis) and then kept by the settlements of every replica.

var reserveScript = redis.NewScript(`
local now_ms, sec, day = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local amount, toks, hid, hexp, n = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local keep = 3 * 86400
local st = {}
for i = 1, n do
  local b, bh, bha, br = KEYS[4*i-3], KEYS[4*i-2], KEYS[4*i-1], KEYS[4*i]
  local o = 8 + (i-1)*6
  local s = {credit = tonumber(ARGV[o+1]), daily = tonumber(ARGV[o+2]), rpm = tonumber(ARGV[o+3]), tpm = tonumber(ARGV[o+4])}
  if redis.call("EXISTS", b) == 0 then
    redis.call("HSET", b, "spent", ARGV[o+5], "day", day, "today", ARGV[o+6], "held", 0)
  end
  local dead = redis.call("ZRANGEBYSCORE", bh, "-inf", now_ms)
  if #dead > 0 then
    local amts = redis.call("HMGET", bha, unpack(dead))
    local sum = 0
    for _, a in ipairs(amts) do sum = sum + (tonumber(a) or 0) end
    redis.call("HINCRBY", b, "held", -sum)
    redis.call("ZREMRANGEBYSCORE", bh, "-inf", now_ms)
    redis.call("HDEL", bha, unpack(dead))
  end
  local v = redis.call("HMGET", b, "spent", "day", "today", "held")
  s.spent, s.held = tonumber(v[1]) or 0, math.max(tonumber(v[4]) or 0, 0)
  s.today = tonumber(v[3]) or 0
  if tonumber(v[2]) ~= day then
    s.today = 0
    redis.call("HSET", b, "day", day, "today", 0)
  end
  s.reqs, s.tks, s.r, s.t = 0, 0, {}, {}
  if s.rpm > 0 or s.tpm > 0 then
    local all = redis.call("HGETALL", br)
    local old = {}
    for j = 1, #all, 2 do
      local f, val = all[j], tonumber(all[j+1])
      local at = tonumber(string.sub(f, 2))
      if at <= sec - 60 then
        table.insert(old, f)
      elseif string.sub(f, 1, 1) == "r" then
        s.reqs = s.reqs + val; s.r[at] = val
      else
        s.tks = s.tks + val; s.t[at] = val
      end
    end
    if #old > 0 then redis.call("HDEL", br, unpack(old)) end
  end
  st[i] = s
end
local function freein(slots, need)
  local freed = 0
  for at = sec - 59, sec do
    freed = freed + (slots[at] or 0)
    if freed >= need then return math.max((at + 60) * 1000 - now_ms, 1) end
  end
  return 0
end
for i = 1, n do
  local s = st[i]
  if s.credit >= 0 and s.spent + s.held + amount > s.credit then return {"refused", i, 0, 0} end
end
for i = 1, n do
  local s = st[i]
  if s.daily >= 0 and s.today + s.held + amount > s.daily then
    return {"refused", i, 1, (day + 1) * 86400000 - now_ms}
  end
end
for i = 1, n do
  local s = st[i]
  if s.rpm > 0 and s.reqs + 1 > s.rpm then return {"refused", i, 2, freein(s.r, s.reqs + 1 - s.rpm)} end
end
for i = 1, n do
  local s = st[i]
  if s.tpm > 0 and s.tks + toks > s.tpm then
    local retry = 0
    if toks <= s.tpm then retry = freein(s.t, s.tks + toks - s.tpm) end
    return {"refused", i, 3, retry}
  end
end
for i = 1, n do
  local b, bh, bha, br = KEYS[4*i-3], KEYS[4*i-2], KEYS[4*i-1], KEYS[4*i]
  redis.call("HINCRBY", b, "held", amount)
  redis.call("ZADD", bh, hexp, hid)
  redis.call("HSET", bha, hid, amount)
  redis.call("HINCRBY", br, "r" .. sec, 1)
  redis.call("HINCRBY", br, "t" .. sec, toks)
  redis.call("EXPIRE", b, keep)
  redis.call("EXPIRE", bh, keep)
  redis.call("EXPIRE", bha, keep)
  redis.call("EXPIRE", br, 120)
end
return {"ok"}
`)

var settleScript = redis.NewScript(`
local hid, actual, delta, hsec, day, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
for i = 1, n do
  local b, bh, bha, br = KEYS[4*i-3], KEYS[4*i-2], KEYS[4*i-1], KEYS[4*i]
  if redis.call("ZREM", bh, hid) == 1 then
    local a = tonumber(redis.call("HGET", bha, hid)) or 0
    redis.call("HDEL", bha, hid)
    redis.call("HINCRBY", b, "held", -a)
  end
  if redis.call("EXISTS", b) == 1 then
    if tonumber(redis.call("HGET", b, "day")) ~= day then redis.call("HSET", b, "day", day, "today", 0) end
    redis.call("HINCRBY", b, "spent", actual)
    redis.call("HINCRBY", b, "today", actual)
  end
  if delta ~= 0 then
    local f = "t" .. hsec
    local cur = tonumber(redis.call("HGET", br, f))
    if cur then redis.call("HSET", br, f, math.max(cur + delta, 0)) end
  end
end
return 1
`)

// budgetShared implements budget.Shared.
type budgetShared struct{ c *Client }

var _ budget.Shared = budgetShared{}

// ShareBudgets makes a's gates (credit, daily caps, RPM, TPM) shared by
// every replica on this Redis, with policy p while Redis is down.
func (c *Client) ShareBudgets(a *budget.Accountant, p budget.DownPolicy) {
	a.SetShared(budgetShared{c}, p)
}

func (s budgetShared) keys(r *budget.SharedReserve) []string {
	ks := make([]string, 0, 4*len(r.Scopes))
	for _, sc := range r.Scopes {
		ks = append(ks, s.c.key("b", sc.Key), s.c.key("bh", sc.Key), s.c.key("bha", sc.Key), s.c.key("br", sc.Key))
	}
	return ks
}

const secsPerDay = 86400

// Reserve implements budget.Shared.
func (s budgetShared) Reserve(r *budget.SharedReserve) (budget.SharedVerdict, error) {
	c := s.c
	now := r.Now
	args := make([]any, 0, 8+6*len(r.Scopes))
	args = append(args, now.UnixMilli(), now.Unix(), now.Unix()/secsPerDay, r.Amount, r.Tokens, r.HoldID,
		now.Add(r.HoldTTL).UnixMilli(), len(r.Scopes))
	for _, sc := range r.Scopes {
		args = append(args, sc.Credit, sc.Daily, sc.RPM, sc.TPM, sc.SeedSpent, sc.SeedToday)
	}
	var res []any
	err := c.call(context.Background(), "budget.reserve", func(ctx context.Context) error {
		var err error
		res, err = reserveScript.Run(ctx, c.rdb, s.keys(r), args...).Slice()
		return err
	})
	if err != nil {
		return budget.SharedVerdict{}, err
	}
	if len(res) == 0 {
		return budget.SharedVerdict{}, errors.New("redisstate: empty reserve reply")
	}
	if res[0] == "ok" {
		return budget.SharedVerdict{OK: true}, nil
	}
	if len(res) < 4 {
		return budget.SharedVerdict{}, errors.New("redisstate: short reserve reply")
	}
	i, _ := res[1].(int64)
	g, _ := res[2].(int64)
	ms, _ := res[3].(int64)
	return budget.SharedVerdict{Index: int(i) - 1, Gate: int(g), Retry: time.Duration(ms) * time.Millisecond}, nil
}

// Settle implements budget.Shared through the durable queue: a settlement
// made while Redis is down is sent when it returns, so its hold does not
// block the budget until it expires.
func (s budgetShared) Settle(r *budget.SharedReserve, actual, tokenDelta int64) {
	c := s.c
	now := time.Now()
	ks := s.keys(r)
	args := []any{r.HoldID, actual, tokenDelta, strconv.FormatInt(r.Now.Unix(), 10), now.Unix() / secsPerDay, len(r.Scopes)}
	c.durable("budget.settle", 0, func(ctx context.Context, rc redis.Cmdable) error {
		return settleScript.Run(ctx, rc, ks, args...).Err()
	})
}
