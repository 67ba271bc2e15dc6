/*
 * The group (pto_gloo.h): open (the rendezvous through the store, the full
 * mesh of Gloo pairs), a subgroup's open (through its top group's store and
 * on its parent's device), the collectives, close; every exception stops at
 * the C boundary here and becomes a code and the thread's last error.
 */
#include "ptorun/pto_gloo.h"

#include <arpa/inet.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>
#include <sys/random.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gloo/gloo_error.h"
#include "gloo/gloo_store.h"

struct PtoGlooGroup {
  int rank = 0;
  int nranks = 0;
  std::chrono::milliseconds timeout{0};
  uint32_t next_tag = 1; /* one per collective, the same sequence on every rank */
  /* the pieces a reduction receives, kept (uninitialized) from one call to
   * the next: a fresh buffer per call costs more in page faults and zeroing
   * than the exchange */
  std::unique_ptr<unsigned char[]> scratch;
  size_t scratch_bytes = 0;
  std::unique_ptr<ptogloo::StoreServer> server; /* rank 0 of a top group only */
  /* the rendezvous's connection, kept as this rank's health lane (gloo_store.h);
     a top group's only */
  std::unique_ptr<ptogloo::StoreClient> health;
  /* the top group's health client, which names lost ranks (this group's own
     `health` for a top group; a subgroup's parent outlives it) */
  const ptogloo::StoreClient *lanes = nullptr;
  /* a subgroup's: its ranks in the top group's numbering (the store's) and in
     its parent's (its messages'); empty for a top group */
  std::vector<int> top_ranks;
  std::vector<int> parent_ranks;
  /* where its subgroups' keys live in the store: "" for a top group, else
     "<parent's prefix>sub/<tag>/" */
  std::string key_prefix;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  /* where each rank's pair with this rank listens (ip, port), as published in
   * the store; empty ip when unknown */
  std::vector<std::pair<std::string, uint16_t>> peers;
};

namespace {

using ptogloo::Error;

struct RootInfo {
  struct sockaddr_in store;
  std::string group_id;
};

bool is_hex(const std::string &s) { return s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos; }

RootInfo parse_rootinfo(const std::string &text) {
  const std::string prefix = PTO_GLOO_ROOTINFO_PREFIX;
  if (text.compare(0, prefix.size(), prefix) != 0)
    throw Error(PTO_ERR_INVALID_ARGUMENT, "rootinfo does not start with '" + prefix + "': '" + text + "'");
  RootInfo info;
  bool have_store = false;
  bool have_group = false;
  size_t at = prefix.size();
  while (at <= text.size()) {
    size_t end = text.find(';', at);
    if (end == std::string::npos) end = text.size();
    std::string field = text.substr(at, end - at);
    if (field.compare(0, 6, "store=") == 0 && !have_store) {
      info.store = ptogloo::parse_endpoint(field.substr(6));
      have_store = true;
    } else if (field.compare(0, 6, "group=") == 0 && !have_group) {
      info.group_id = field.substr(6);
      if (info.group_id.size() != PTO_GLOO_GROUP_ID_CHARS || !is_hex(info.group_id))
        throw Error(PTO_ERR_INVALID_ARGUMENT, "rootinfo group is not 32 hex characters: '" + info.group_id + "'");
      have_group = true;
    } else {
      throw Error(PTO_ERR_INVALID_ARGUMENT, "rootinfo field not understood: '" + field + "'");
    }
    at = end + 1;
  }
  if (!have_store || !have_group)
    throw Error(PTO_ERR_INVALID_ARGUMENT, "rootinfo needs store= and group=: '" + text + "'");
  return info;
}

/* The Gloo addresses rank i published (key "<i>": one tcp::Address per peer,
 * where its pair with that peer listens) -> the ip and port its pair with
 * this rank listens on. */
void learn_peers(PtoGlooGroup *g, const ptogloo::StoreClient &store, const std::string &prefix) {
  g->peers.assign(static_cast<size_t>(g->nranks), {std::string(), 0});
  if (g->nranks < 2) return;
  for (const auto &kv : store.seen()) {
    if (kv.first.compare(0, prefix.size(), prefix) != 0) continue;
    std::string key = kv.first.substr(prefix.size());
    if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos) continue;
    long i = std::stol(key);
    if (i < 0 || i >= g->nranks || kv.second.size() % static_cast<size_t>(g->nranks - 1) != 0) continue;
    size_t each = kv.second.size() / static_cast<size_t>(g->nranks - 1);
    /* rank i's list holds an address per peer in rank order without i: the
     * one its pair with this rank listens on */
    size_t slot = static_cast<size_t>(g->rank < i ? g->rank : g->rank - 1);
    auto from = kv.second.begin() + static_cast<long>(slot * each);
    try {
      gloo::transport::tcp::Address addr(std::vector<char>(from, from + static_cast<long>(each)));
      const struct sockaddr_storage &ss = addr.getSockaddr();
      if (ss.ss_family != AF_INET) continue;
      const struct sockaddr_in *in = reinterpret_cast<const struct sockaddr_in *>(&ss);
      char ip[INET_ADDRSTRLEN];
      if (!inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip)) continue;
      g->peers[static_cast<size_t>(i)] = {ip, ntohs(in->sin_port)};
    } catch (...) {
      /* another layout of the address: the peer stays unnamed */
    }
  }
}

/* How long a rank whose call failed waits for the store to see a rank die, and
   how long rank 0's close waits for the other ranks to leave (pto_gloo.h). */
constexpr std::chrono::milliseconds kLostWait{500};
constexpr std::chrono::milliseconds kCloseGrace{2000};

/* How a subgroup's messages name its rank i: in its parent's numbering. */
std::string rank_name(const PtoGlooGroup *g, int i) {
  if (g->parent_ranks.empty()) return std::to_string(i);
  return std::to_string(g->parent_ranks[static_cast<size_t>(i)]);
}
const char *numbering(const PtoGlooGroup *g) { return g->parent_ranks.empty() ? "" : " of the parent group"; }
std::string who(const PtoGlooGroup *g, int i) {
  return (g->parent_ranks.empty() ? "rank " : "parent rank ") + rank_name(g, i);
}

/* The ranks the store saw die (their health lane closed without a goodbye),
 * e.g. "peer rank 3" (of a subgroup: only its members, named in the parent's
 * numbering); rank 0 when the store itself is gone; "" when it saw none
 * within kLostWait (a partition, a slow peer). */
std::string lost_by_store(const PtoGlooGroup *g) {
  if (!g->lanes) return "";
  bool sub = !g->top_ranks.empty();
  try {
    std::vector<int> among;
    for (size_t i = 0; i < g->top_ranks.size(); i++)
      if (static_cast<int>(i) != g->rank) among.push_back(g->top_ranks[i]);
    if (sub && among.empty()) return "";
    std::vector<int> lost = g->lanes->lost(kLostWait, among);
    std::string list;
    for (size_t i = 0; i < lost.size(); i++) {
      int named = lost[i];
      for (size_t k = 0; sub && k < g->top_ranks.size(); k++)
        if (g->top_ranks[k] == lost[i]) named = g->parent_ranks[k];
      list += (i == 0 ? "" : i + 1 == lost.size() ? " and " : ", ") + std::to_string(named);
    }
    return lost.empty() ? "" : (lost.size() == 1 ? "peer rank " : "peer ranks ") + list + numbering(g);
  } catch (const Error &e) {
    if (e.code() == PTO_ERR_TIMEOUT) return "";
    if (sub) return "the store (rank 0 of the top group; it is gone: " + std::string(e.what()) + ")";
    return g->rank == 0 ? "" : "peer rank 0 (its store is gone: " + std::string(e.what()) + ")";
  } catch (...) {
    return "";
  }
}

/* Names the peer Gloo's message is about: the ranks the store saw die, else
 * the rank whose listening ip:port it names, else the only other rank at the
 * ip it names, else "a peer". */
std::string name_peer(const void *ctx, const std::string &what) {
  const PtoGlooGroup *g = static_cast<const PtoGlooGroup *>(ctx);
  if (!g) return "a peer";
  std::string lost = lost_by_store(g);
  if (!lost.empty()) return lost;
  std::vector<int> at_ip;
  for (int i = 0; i < static_cast<int>(g->peers.size()); i++) {
    const auto &p = g->peers[static_cast<size_t>(i)];
    if (i == g->rank || p.first.empty()) continue;
    /* this Gloo prints the port in network byte order: accept both */
    uint16_t swapped = static_cast<uint16_t>((p.second >> 8) | (p.second << 8));
    for (uint16_t port : {p.second, swapped}) {
      std::string at = p.first + "]:" + std::to_string(port);
      size_t pos = what.find(at);
      if (pos != std::string::npos) {
        size_t end = pos + at.size();
        if (end >= what.size() || what[end] < '0' || what[end] > '9')
          return "peer rank " + rank_name(g, i) + numbering(g);
      }
    }
    size_t pos = what.find(p.first);
    if (pos != std::string::npos) {
      char next = pos + p.first.size() < what.size() ? what[pos + p.first.size()] : '\0';
      if (!(next >= '0' && next <= '9')) at_ip.push_back(i);
    }
  }
  if (at_ip.size() == 1) return "peer rank " + rank_name(g, at_ip[0]) + numbering(g);
  if (at_ip.size() > 1) {
    std::string list;
    for (int i : at_ip) list += (list.empty() ? "" : " or ") + rank_name(g, i);
    return "a peer (rank " + list + numbering(g) + ")";
  }
  return "a peer";
}

template <typename T>
T *scratch(PtoGlooGroup *g, size_t len) {
  size_t bytes = len * sizeof(T);
  if (bytes > g->scratch_bytes) {
    g->scratch.reset();
    g->scratch_bytes = 0;
    g->scratch.reset(new unsigned char[bytes]);
    g->scratch_bytes = bytes;
  }
  return reinterpret_cast<T *>(g->scratch.get());
}

int check_group(PtoGlooGroup *g) {
  if (!g) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "group is NULL");
  if (!g->context) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "group is not open");
  return PTO_OK;
}

/* Every collective's options: the next tag of the group's sequence (the same on
   every rank) and the group's timeout. */
template <typename Options>
void sequence(PtoGlooGroup *g, Options &opts) {
  opts.setTag(g->next_tag++);
  opts.setTimeout(g->timeout);
}

/* Element bounds of rank k's chunk of n elements over N ranks: floor(k*n/N). */
size_t chunk_bound(size_t k, size_t n, size_t N) {
  return static_cast<size_t>(static_cast<unsigned __int128>(k) * n / N);
}

/* Rank r receives chunk r (send_counts[k] elements of `in`, chunks in rank
 * order) of every rank into `pieces` (N * mine elements) and leaves sum[i] =
 * ((p0[i] + p1[i]) + p2[i]) + ... over the N pieces, in rank order.
 * T: float, or uint32_t for int32 (unsigned: addition wraps, two's complement). */
template <typename T>
void exchange_and_sum(PtoGlooGroup *g, const T *in, const std::vector<int64_t> &send_counts, T *pieces, T *sum,
                      size_t mine) {
  size_t N = static_cast<size_t>(g->nranks);
  gloo::AlltoallvOptions opts(g->context);
  opts.setInput(const_cast<T *>(in), send_counts); /* gloo only reads its input */
  opts.setOutput(pieces, std::vector<int64_t>(N, static_cast<int64_t>(mine)));
  sequence(g, opts);
  gloo::alltoallv(opts);
  if (mine == 0) return;
  /* element by element, the pieces in rank order: four elements at a time
   * (each lane its own element, so every element's order stays the same) */
  typedef T x4 __attribute__((vector_size(4 * sizeof(T))));
  std::memcpy(sum, pieces, mine * sizeof(T));
  for (size_t k = 1; k < N; k++) {
    const T *p = pieces + k * mine;
    size_t i = 0;
    for (; i + 4 <= mine; i += 4) {
      x4 a, b;
      std::memcpy(&a, sum + i, sizeof a);
      std::memcpy(&b, p + i, sizeof b);
      a += b;
      std::memcpy(sum + i, &a, sizeof a);
    }
    for (; i < mine; i++) sum[i] += p[i];
  }
}

/* What a collective call carries that every rank must pass the same. */
enum CallKind : uint64_t { kAllreduce = 1, kReduceScatter, kAllgather, kBroadcast, kAllreduceI32, kAllgatherv };

std::string describe(const uint64_t call[3]) {
  std::string n = std::to_string(call[1]);
  switch (call[0]) {
    case kAllreduce: return "allreduce_sum_f32 of " + n + " floats";
    case kReduceScatter: return "reduce_scatter_sum_f32 of " + n + " floats per rank";
    case kAllgather: return "allgather of " + n + " bytes per rank";
    case kBroadcast: return "broadcast of " + n + " bytes from rank " + std::to_string(call[2]);
    case kAllreduceI32: return "allreduce_sum_i32 of " + n + " int32";
    case kAllgatherv: {
      char hash[24];
      std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(call[2]));
      return "allgatherv of " + n + " bytes in all (sizes per rank hashed " + hash + ")";
    }
    default: return "call " + std::to_string(call[0]);
  }
}

/* Before a collective moves data, the ranks compare what they were called
 * with (one small all-gather): Gloo's transport cannot survive a message
 * longer than the buffer posted for it (its event thread terminates the
 * process), so a disagreement must fail here, on every rank alike. */
void agree(PtoGlooGroup *g, CallKind kind, uint64_t size, uint64_t root) {
  size_t N = static_cast<size_t>(g->nranks);
  if (N == 1) return; /* nobody to disagree with */
  uint64_t mine[3] = {kind, size, root};
  std::vector<uint64_t> all(3 * N);
  gloo::AllgathervOptions opts(g->context);
  opts.setInput(mine, 3);
  opts.setOutput(all.data(), std::vector<size_t>(N, 3));
  sequence(g, opts);
  gloo::allgatherv(opts);
  for (size_t k = 0; k < N; k++) {
    const uint64_t *theirs = all.data() + 3 * k;
    if (theirs[0] != mine[0] || theirs[1] != mine[1] || theirs[2] != mine[2])
      throw Error(PTO_ERR_RANKS_DISAGREE, who(g, static_cast<int>(k)) + " calls " + describe(theirs) + ", " +
                                              who(g, g->rank) + " " + describe(mine));
  }
}

/* out[i] = ((src[0][i] + src[1][i]) + src[2][i]) + ... for i < len, the n
 * sources in rank order; out may be one of them (each element is read from
 * every source before it is written). Four elements at a time, each lane its
 * own element, so every element's order stays the same. */
template <typename T>
void sum_in_order(T *out, const T *const *src, size_t n, size_t len) {
  typedef T x4 __attribute__((vector_size(4 * sizeof(T))));
  size_t i = 0;
  if (n == 2) { /* the two-host case, without the loop over the sources */
    for (; i + 4 <= len; i += 4) {
      x4 a, b;
      std::memcpy(&a, src[0] + i, sizeof a);
      std::memcpy(&b, src[1] + i, sizeof b);
      a += b;
      std::memcpy(out + i, &a, sizeof a);
    }
  }
  for (; i + 4 <= len; i += 4) {
    x4 a, b;
    std::memcpy(&a, src[0] + i, sizeof a);
    for (size_t k = 1; k < n; k++) {
      std::memcpy(&b, src[k] + i, sizeof b);
      a += b;
    }
    std::memcpy(out + i, &a, sizeof a);
  }
  for (; i < len; i++) {
    T a = src[0][i];
    for (size_t k = 1; k < n; k++) a += src[k][i];
    out[i] = a;
  }
}

/* The pipelined allreduce's segment: small enough that summing one overlaps
 * the next one on the wire, large enough that Gloo's handshake per message
 * (a notification each way) stays noise. */
constexpr size_t kSegmentBytes = size_t(1) << 20;
/* Its slots are Slot::build(kAllreduceSlotPrefix, tag) + delta, delta below
 * the tag's bits (2^24): the reduce-scatter's segment s at s, the
 * all-gather's at kGatherSlots + s. */
constexpr uint64_t kGatherSlots = uint64_t(1) << 23;

using Buffer = std::unique_ptr<gloo::transport::UnboundBuffer>;

/* Gloo's waits return false only when aborted, which nothing here does. */
void wait_send(gloo::transport::UnboundBuffer &b, std::chrono::milliseconds timeout) {
  if (!b.waitSend(nullptr, timeout)) throw Error(PTO_ERR_FAILED, "a send was aborted");
}
void wait_recv(gloo::transport::UnboundBuffer &b, std::chrono::milliseconds timeout) {
  if (!b.waitRecv(nullptr, timeout)) throw Error(PTO_ERR_FAILED, "a receive was aborted");
}

/* In place over `data`, N >= 2, count > 0: rank r owns chunk r (chunk_bound)
 * and each chunk is cut into segments. Every rank sends the other ranks'
 * chunks straight from `data` and receives the others' pieces of its own
 * chunk into the scratch (one area per peer); as segment s has come from
 * every peer it sums it in rank order into `data` (its own piece is already
 * there) while the next segments are on the wire, and sends the summed
 * segment to every peer, which receives it straight into its `data`. No
 * copies: the network's, one pass of the sum. T: float, or uint32_t for
 * int32 (unsigned: addition wraps, two's complement). */
template <typename T>
void reduce_scatter_allgather(PtoGlooGroup *g, T *data, size_t count) {
  const size_t N = static_cast<size_t>(g->nranks);
  const size_t r = static_cast<size_t>(g->rank);
  std::vector<size_t> lo(N + 1);
  size_t widest = 0;
  for (size_t k = 0; k <= N; k++) {
    lo[k] = chunk_bound(k, count, N);
    if (k > 0) widest = std::max(widest, lo[k] - lo[k - 1]);
  }
  /* segments of kSegmentBytes, fewer only past 2^23 of them */
  const size_t seg = std::max(kSegmentBytes / sizeof(T), (widest + kGatherSlots - 1) / kGatherSlots);
  auto segments = [&](size_t k) { return (lo[k + 1] - lo[k] + seg - 1) / seg; };
  auto at = [&](size_t k, size_t s) { return (lo[k] + s * seg) * sizeof(T); }; /* bytes into data */
  auto bytes = [&](size_t k, size_t s) { return std::min(seg, lo[k + 1] - lo[k] - s * seg) * sizeof(T); };
  /* the peers' pieces of this rank's chunk: peer k's at (k < r ? k : k - 1) * mine */
  const size_t mine = lo[r + 1] - lo[r];
  auto piece = [&](size_t k) { return (k < r ? k : k - 1) * mine; };
  T *pieces = scratch<T>(g, (N - 1) * mine + 1);
  /* every rank takes the same tag: the same slots */
  const uint64_t slot = gloo::Slot::build(gloo::kAllreduceSlotPrefix, g->next_tag++);
  const size_t own = segments(r);
  size_t most = 0;
  for (size_t k = 0; k < N; k++) most = std::max(most, segments(k));
  gloo::Context &ctx = *g->context;

  /* receives first, so the peers' sends find them posted: segment s of this
   * rank's chunk from every peer (a buffer per segment, to wait on it alone) */
  std::vector<Buffer> arrived(own);
  for (size_t s = 0; s < own; s++) {
    arrived[s] = ctx.createUnboundBuffer(pieces, (N - 1) * mine * sizeof(T));
    for (size_t k = 0; k < N; k++)
      if (k != r) arrived[s]->recv(static_cast<int>(k), slot + s, (piece(k) + s * seg) * sizeof(T), bytes(r, s));
  }
  /* the peers' chunks, segment by segment (a buffer per peer and segment: the
   * all-gather's receive into a segment waits for its send alone) */
  std::vector<std::vector<Buffer>> sent(N);
  for (size_t s = 0; s < most; s++)
    for (size_t k = 0; k < N; k++)
      if (k != r && s < segments(k)) {
        sent[k].push_back(ctx.createUnboundBuffer(data, count * sizeof(T)));
        sent[k][s]->send(static_cast<int>(k), slot + s, at(k, s), bytes(k, s));
      }

  Buffer gathered = ctx.createUnboundBuffer(data, count * sizeof(T)); /* the peers' sums */
  Buffer spread = ctx.createUnboundBuffer(data, count * sizeof(T));   /* this rank's */
  size_t receiving = 0;
  size_t sending = 0;
  std::vector<const T *> src(N);
  for (size_t s = 0; s < most; s++) {
    /* a peer's sum lands where this rank's send of that segment read: receive
     * it only once that send is done */
    for (size_t k = 0; k < N; k++)
      if (k != r && s < segments(k)) {
        wait_send(*sent[k][s], g->timeout);
        gathered->recv(static_cast<int>(k), slot + kGatherSlots + s, at(k, s), bytes(k, s));
        receiving++;
      }
    if (s >= own) continue;
    for (size_t k = 1; k < N; k++) wait_recv(*arrived[s], g->timeout);
    for (size_t k = 0; k < N; k++) src[k] = k == r ? data + lo[r] + s * seg : pieces + piece(k) + s * seg;
    sum_in_order(data + lo[r] + s * seg, src.data(), N, bytes(r, s) / sizeof(T));
    for (size_t k = 0; k < N; k++)
      if (k != r) {
        spread->send(static_cast<int>(k), slot + kGatherSlots + s, at(r, s), bytes(r, s));
        sending++;
      }
  }
  for (; sending > 0; sending--) wait_send(*spread, g->timeout);
  for (; receiving > 0; receiving--) wait_recv(*gathered, g->timeout);
}

/* allreduce_sum_f32 and _i32 (T: float, uint32_t): pto_gloo.h. */
template <typename T>
int allreduce_sum(PtoGlooGroup *g, T *data, size_t count, CallKind kind, const char *op) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if (!data && count > 0) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, std::string(op) + ": data is NULL");
  try {
    agree(g, kind, count, 0);
    if (count == 0 || g->nranks == 1) return PTO_OK;
    reduce_scatter_allgather(g, data, count);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current(op, name_peer, g);
  }
}

/* A subgroup's tag: 1..64 of [A-Za-z0-9._-] (it becomes part of store keys). */
bool good_tag(const char *tag) {
  size_t n = std::strlen(tag);
  if (n < 1 || n > 64) return false;
  for (size_t i = 0; i < n; i++) {
    char c = tag[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string rank_list(const int *ranks, size_t count) {
  std::string s = "{";
  for (size_t i = 0; i < count; i++) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "}";
}

/* 64-bit FNV-1a of the sizes: what allgatherv's ranks compare (agree()). */
uint64_t hash_sizes(const size_t *sizes, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t k = 0; k < n; k++) {
    uint64_t v = sizes[k];
    for (int b = 0; b < 8; b++) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace

extern "C" {

PTO_GLOO_EXPORT int ptorun_gloo_open(const char *rootinfo, int rank, int nranks, const char *bind_addr,
                                     uint32_t timeout_ms, PtoGlooGroup **out) {
  if (out) *out = nullptr;
  if (!rootinfo || !bind_addr || !out)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open: rootinfo, bind_addr and out must not be NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open: rank " + std::to_string(rank) +
                                                       " not in a group of " + std::to_string(nranks));
  if (timeout_ms == 0) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open: timeout_ms is 0");
  /* outside the try: the handler still names peers through it */
  std::unique_ptr<PtoGlooGroup> group;
  PtoGlooGroup *g = nullptr;
  try {
    RootInfo info = parse_rootinfo(rootinfo);
    ptogloo::parse_ipv4(bind_addr);
    group.reset(new PtoGlooGroup());
    g = group.get();
    g->rank = rank;
    g->nranks = nranks;
    g->timeout = std::chrono::milliseconds(timeout_ms);
    if (rank == 0) g->server.reset(new ptogloo::StoreServer(info.store, info.group_id));
    g->health.reset(new ptogloo::StoreClient(info.store, info.group_id, g->timeout));
    g->lanes = g->health.get();
    ptogloo::StoreClient &store = *g->health;

    /* every rank checks its group size against rank 0's */
    std::string n = std::to_string(nranks);
    store.set("nranks/" + std::to_string(rank), std::vector<char>(n.begin(), n.end()));
    std::vector<char> n0 = store.get("nranks/0");
    if (std::string(n0.begin(), n0.end()) != n)
      throw Error(PTO_ERR_RANKS_DISAGREE, "rank " + std::to_string(rank) + " opens a group of " + n +
                                              " ranks, rank 0 one of " + std::string(n0.begin(), n0.end()));

    /* every rank's arrival, named: the first rank still missing at the deadline
       (rank 0's absence is the store's: no rank can reach it) */
    const auto deadline = std::chrono::steady_clock::now() + g->timeout;
    for (int q = 0; q < nranks; q++) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      try {
        store.wait({"nranks/" + std::to_string(q)}, std::max(left, std::chrono::milliseconds(1)));
      } catch (const Error &e) {
        if (e.code() != PTO_ERR_TIMEOUT) throw;
        throw Error(PTO_ERR_TIMEOUT, "rank " + std::to_string(q) + " did not arrive within " +
                                         std::to_string(timeout_ms) + " ms");
      }
    }

    gloo::transport::tcp::attr attr;
    attr.hostname = bind_addr;
    attr.ai_family = AF_INET;
    g->device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(g->timeout);
    context->connectFullMesh(store, g->device);
    g->context = context;
    learn_peers(g, store, "");

    /* return only once every rank is connected */
    gloo::BarrierOptions barrier(g->context);
    barrier.setTag(0);
    barrier.setTimeout(g->timeout);
    gloo::barrier(barrier);
    store.hello(rank);
    *out = group.release();
    return PTO_OK;
  } catch (...) {
    int rc = ptogloo::fail_current("ptorun_gloo_open", name_peer, g);
    if (g != nullptr && g->server) {
      /* the others may still wait for a rank that never came: keep the store until
         they fail on their own deadline (naming that rank) or the grace ends */
      g->health.reset();
      g->server->await_clients_gone(kCloseGrace);
    }
    return rc;
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_open_subgroup(PtoGlooGroup *parent, const char *tag, const int *ranks, size_t count,
                                              PtoGlooGroup **out) {
  if (out) *out = nullptr;
  int rc = check_group(parent);
  if (rc != PTO_OK) return rc;
  if (!tag || !ranks || !out)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open_subgroup: tag, ranks and out must not be NULL");
  if (!good_tag(tag))
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open_subgroup: tag '" + std::string(tag) +
                                                       "' is not 1 to 64 of [A-Za-z0-9._-]");
  if (count < 1 || count > static_cast<size_t>(parent->nranks))
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open_subgroup: " + std::to_string(count) +
                                                       " ranks of a parent of " + std::to_string(parent->nranks));
  std::string list = rank_list(ranks, count);
  int me = -1;
  for (size_t i = 0; i < count; i++) {
    if (ranks[i] < 0 || ranks[i] >= parent->nranks || (i > 0 && ranks[i] <= ranks[i - 1]))
      return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open_subgroup: ranks " + list +
                                                         " are not strictly ascending ranks of a parent of " +
                                                         std::to_string(parent->nranks));
    if (ranks[i] == parent->rank) me = static_cast<int>(i);
  }
  if (me < 0)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_open_subgroup: parent rank " +
                                                       std::to_string(parent->rank) + " is not among ranks " + list);
  /* outside the try: the handler still names peers through it */
  std::unique_ptr<PtoGlooGroup> group;
  PtoGlooGroup *g = nullptr;
  try {
    group.reset(new PtoGlooGroup());
    g = group.get();
    g->rank = me;
    g->nranks = static_cast<int>(count);
    g->timeout = parent->timeout;
    g->lanes = parent->lanes;
    g->parent_ranks.assign(ranks, ranks + count);
    for (size_t i = 0; i < count; i++)
      g->top_ranks.push_back(parent->top_ranks.empty() ? ranks[i] : parent->top_ranks[static_cast<size_t>(ranks[i])]);
    g->key_prefix = parent->key_prefix + "sub/" + tag + "/";
    /* a connection of its own: a wait parked on it (for a member not there
       yet) must not hold up another thread's use of the parent's store */
    std::unique_ptr<ptogloo::StoreClient> store = parent->lanes->another();

    /* every member compares its list with every other member's before
       connecting: members that agree all connect, and whoever passed another
       list fails, as does every member whose list it is in */
    store->set(g->key_prefix + "ranks/" + std::to_string(parent->rank), std::vector<char>(list.begin(), list.end()));
    for (size_t i = 0; i < count; i++) {
      if (static_cast<int>(i) == me) continue;
      std::vector<char> theirs = store->get(g->key_prefix + "ranks/" + std::to_string(ranks[i]));
      if (std::string(theirs.begin(), theirs.end()) != list)
        throw Error(PTO_ERR_RANKS_DISAGREE, "parent rank " + std::to_string(ranks[i]) + " opens subgroup '" + tag +
                                                "' over ranks " + std::string(theirs.begin(), theirs.end()) +
                                                ", parent rank " + std::to_string(parent->rank) + " over " + list);
    }

    auto context = std::make_shared<gloo::rendezvous::Context>(me, static_cast<int>(count));
    context->setTimeout(g->timeout);
    g->context = context;
    if (count > 1) { /* a group of one has no pairs: its collectives are local */
      std::string mesh_prefix = g->key_prefix + "mesh";
      gloo::rendezvous::PrefixStore mesh(mesh_prefix, *store);
      g->device = parent->device; /* its own pairs on the parent's device (listener, event loop) */
      context->connectFullMesh(mesh, g->device);
      learn_peers(g, *store, mesh_prefix + "/");
      gloo::BarrierOptions barrier(g->context);
      barrier.setTag(0);
      barrier.setTimeout(g->timeout);
      gloo::barrier(barrier);
    }
    *out = group.release();
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_open_subgroup", name_peer, g);
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_allreduce_sum_f32(PtoGlooGroup *g, float *data, size_t count) {
  return allreduce_sum(g, data, count, kAllreduce, "ptorun_gloo_allreduce_sum_f32");
}

PTO_GLOO_EXPORT int ptorun_gloo_allreduce_sum_i32(PtoGlooGroup *g, int32_t *data, size_t count) {
  /* uint32_t may alias int32_t, and its addition wraps as two's complement's */
  return allreduce_sum(g, reinterpret_cast<uint32_t *>(data), count, kAllreduceI32, "ptorun_gloo_allreduce_sum_i32");
}

PTO_GLOO_EXPORT int ptorun_gloo_reduce_scatter_sum_f32(PtoGlooGroup *g, const float *in, float *out,
                                                       size_t count_per_rank) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if ((!in || !out) && count_per_rank > 0)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_reduce_scatter_sum_f32: in or out is NULL");
  try {
    agree(g, kReduceScatter, count_per_rank, 0);
    if (count_per_rank == 0) return PTO_OK;
    if (g->nranks == 1) {
      std::memcpy(out, in, count_per_rank * sizeof(float));
      return PTO_OK;
    }
    size_t N = static_cast<size_t>(g->nranks);
    std::vector<int64_t> counts(N, static_cast<int64_t>(count_per_rank));
    float *pieces = scratch<float>(g, N * count_per_rank);
    exchange_and_sum(g, in, counts, pieces, out, count_per_rank);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_reduce_scatter_sum_f32", name_peer, g);
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_allgather(PtoGlooGroup *g, const void *in, void *out, size_t bytes_per_rank) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if ((!in || !out) && bytes_per_rank > 0)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_allgather: in or out is NULL");
  try {
    agree(g, kAllgather, bytes_per_rank, 0);
    if (bytes_per_rank == 0) return PTO_OK;
    if (g->nranks == 1) {
      std::memcpy(out, in, bytes_per_rank);
      return PTO_OK;
    }
    gloo::AllgathervOptions opts(g->context);
    opts.setInput(static_cast<uint8_t *>(const_cast<void *>(in)), bytes_per_rank); /* only read */
    opts.setOutput(static_cast<uint8_t *>(out), std::vector<size_t>(static_cast<size_t>(g->nranks), bytes_per_rank));
    sequence(g, opts);
    gloo::allgatherv(opts);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_allgather", name_peer, g);
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_allgatherv(PtoGlooGroup *g, const void *in, void *out, const size_t *bytes_per_rank) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if (!bytes_per_rank)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_allgatherv: bytes_per_rank is NULL");
  size_t N = static_cast<size_t>(g->nranks);
  size_t total = 0;
  for (size_t k = 0; k < N; k++) {
    if (bytes_per_rank[k] > SIZE_MAX - total)
      return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_allgatherv: the sizes overflow size_t");
    total += bytes_per_rank[k];
  }
  size_t mine = bytes_per_rank[g->rank];
  if ((!in && mine > 0) || (!out && total > 0))
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_allgatherv: in or out is NULL");
  try {
    agree(g, kAllgatherv, total, hash_sizes(bytes_per_rank, N));
    if (total == 0) return PTO_OK;
    if (N == 1) {
      std::memcpy(out, in, total);
      return PTO_OK;
    }
    gloo::AllgathervOptions opts(g->context);
    /* no input: nothing of this rank's to copy into out (gloo skips it) */
    if (mine > 0) opts.setInput(static_cast<uint8_t *>(const_cast<void *>(in)), mine); /* only read */
    opts.setOutput(static_cast<uint8_t *>(out), std::vector<size_t>(bytes_per_rank, bytes_per_rank + N));
    sequence(g, opts);
    gloo::allgatherv(opts);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_allgatherv", name_peer, g);
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_broadcast(PtoGlooGroup *g, void *data, size_t bytes, int root) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if (root < 0 || root >= g->nranks)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_broadcast: root " + std::to_string(root) +
                                                       " not in a group of " + std::to_string(g->nranks));
  if (!data && bytes > 0) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_broadcast: data is NULL");
  try {
    agree(g, kBroadcast, bytes, static_cast<uint64_t>(root));
    if (bytes == 0 || g->nranks == 1) return PTO_OK;
    gloo::BroadcastOptions opts(g->context);
    opts.setOutput(static_cast<uint8_t *>(data), bytes);
    opts.setRoot(root);
    sequence(g, opts);
    gloo::broadcast(opts);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_broadcast", name_peer, g);
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_barrier(PtoGlooGroup *g) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if (g->nranks == 1) return PTO_OK;
  try {
    gloo::BarrierOptions opts(g->context);
    sequence(g, opts);
    gloo::barrier(opts);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_barrier", name_peer, g);
  }
}

PTO_GLOO_EXPORT void ptorun_gloo_close(PtoGlooGroup *g) {
  if (!g) return;
  try {
    if (g->health) g->health->bye(); /* leaving, not lost */
    g->health.reset();
    g->context.reset();
    g->device.reset();
    /* rank 0's store outlives its own close a little: a rank whose call failed may
       still ask it who was lost */
    if (g->server) g->server->await_lanes_closed(kCloseGrace);
    g->server.reset();
  } catch (...) {
    /* nothing to report at close */
  }
  delete g;
}

PTO_GLOO_EXPORT const char *ptorun_gloo_last_error(void) { return ptogloo::last_error(); }

PTO_GLOO_EXPORT int ptorun_gloo_new_group_id(char out[33]) {
  if (!out) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_new_group_id: out is NULL");
  unsigned char bytes[PTO_GLOO_GROUP_ID_CHARS / 2];
  size_t have = 0;
  while (have < sizeof bytes) {
    ssize_t got = getrandom(bytes + have, sizeof bytes - have, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return ptogloo::fail(PTO_ERR_FAILED, std::string("ptorun_gloo_new_group_id: getrandom: ") + std::strerror(errno));
    }
    have += static_cast<size_t>(got);
  }
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < sizeof bytes; i++) {
    out[2 * i] = hex[bytes[i] >> 4];
    out[2 * i + 1] = hex[bytes[i] & 15];
  }
  out[PTO_GLOO_GROUP_ID_CHARS] = '\0';
  return PTO_OK;
}

}  // extern "C"
