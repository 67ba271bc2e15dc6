/*
 * The group (pto_gloo.h): open (the rendezvous through the store, the full
 * mesh of Gloo pairs), the collectives, close; every exception stops at the C
 * boundary here and becomes a code and the thread's last error.
 */
#include "ptorun/pto_gloo.h"

#include <arpa/inet.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <sys/random.h>

#include <cerrno>
#include <chrono>
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
  /* the pieces a reduction receives and its sum, kept (uninitialized) from one
   * call to the next: a fresh buffer per call costs more in page faults and
   * zeroing than the exchange */
  std::unique_ptr<float[]> scratch;
  size_t scratch_len = 0;
  std::unique_ptr<ptogloo::StoreServer> server; /* rank 0 only */
  /* the rendezvous's connection, kept as this rank's health lane (gloo_store.h) */
  std::unique_ptr<ptogloo::StoreClient> health;
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
void learn_peers(PtoGlooGroup *g, const ptogloo::StoreClient &store) {
  g->peers.assign(static_cast<size_t>(g->nranks), {std::string(), 0});
  if (g->nranks < 2) return;
  for (const auto &kv : store.seen()) {
    if (kv.first.empty() || kv.first.find_first_not_of("0123456789") != std::string::npos) continue;
    long i = std::stol(kv.first);
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

/* The ranks the store saw die (their health lane closed without a goodbye),
 * e.g. "peer rank 3"; rank 0 when the store itself is gone; "" when it saw
 * none within kLostWait (a partition, a slow peer). */
std::string lost_by_store(const PtoGlooGroup *g) {
  if (!g->health) return "";
  try {
    std::vector<int> lost = g->health->lost(kLostWait);
    std::string list;
    for (size_t i = 0; i < lost.size(); i++)
      list += (i == 0 ? "" : i + 1 == lost.size() ? " and " : ", ") + std::to_string(lost[i]);
    return lost.empty() ? "" : (lost.size() == 1 ? "peer rank " : "peer ranks ") + list;
  } catch (const Error &e) {
    if (e.code() == PTO_ERR_TIMEOUT) return "";
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
        if (end >= what.size() || what[end] < '0' || what[end] > '9') return "peer rank " + std::to_string(i);
      }
    }
    size_t pos = what.find(p.first);
    if (pos != std::string::npos) {
      char next = pos + p.first.size() < what.size() ? what[pos + p.first.size()] : '\0';
      if (!(next >= '0' && next <= '9')) at_ip.push_back(i);
    }
  }
  if (at_ip.size() == 1) return "peer rank " + std::to_string(at_ip[0]);
  if (at_ip.size() > 1) {
    std::string list;
    for (int i : at_ip) list += (list.empty() ? "" : " or ") + std::to_string(i);
    return "a peer (rank " + list + ")";
  }
  return "a peer";
}

float *scratch(PtoGlooGroup *g, size_t len) {
  if (len > g->scratch_len) {
    g->scratch.reset();
    g->scratch_len = 0;
    g->scratch.reset(new float[len]);
    g->scratch_len = len;
  }
  return g->scratch.get();
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
 * order) of every rank into `pieces` (N * mine floats) and leaves sum[i] =
 * ((p0[i] + p1[i]) + p2[i]) + ... over the N pieces, in rank order. */
void exchange_and_sum(PtoGlooGroup *g, const float *in, const std::vector<int64_t> &send_counts, float *pieces,
                      float *sum, size_t mine) {
  size_t N = static_cast<size_t>(g->nranks);
  gloo::AlltoallvOptions opts(g->context);
  opts.setInput(const_cast<float *>(in), send_counts); /* gloo only reads its input */
  opts.setOutput(pieces, std::vector<int64_t>(N, static_cast<int64_t>(mine)));
  sequence(g, opts);
  gloo::alltoallv(opts);
  if (mine == 0) return;
  /* element by element, the pieces in rank order: four elements at a time
   * (each lane its own element, so every element's order stays the same) */
  typedef float f32x4 __attribute__((vector_size(16)));
  std::memcpy(sum, pieces, mine * sizeof(float));
  for (size_t k = 1; k < N; k++) {
    const float *p = pieces + k * mine;
    size_t i = 0;
    for (; i + 4 <= mine; i += 4) {
      f32x4 a, b;
      std::memcpy(&a, sum + i, sizeof a);
      std::memcpy(&b, p + i, sizeof b);
      a += b;
      std::memcpy(sum + i, &a, sizeof a);
    }
    for (; i < mine; i++) sum[i] += p[i];
  }
}

/* What a collective call carries that every rank must pass the same. */
enum CallKind : uint64_t { kAllreduce = 1, kReduceScatter, kAllgather, kBroadcast };

std::string describe(const uint64_t call[3]) {
  std::string n = std::to_string(call[1]);
  switch (call[0]) {
    case kAllreduce: return "allreduce_sum_f32 of " + n + " floats";
    case kReduceScatter: return "reduce_scatter_sum_f32 of " + n + " floats per rank";
    case kAllgather: return "allgather of " + n + " bytes per rank";
    case kBroadcast: return "broadcast of " + n + " bytes from rank " + std::to_string(call[2]);
    default: return "call " + std::to_string(call[0]);
  }
}

/* Before a collective moves data, the ranks compare what they were called
 * with (one small all-gather): Gloo's transport cannot survive a message
 * longer than the buffer posted for it (its event thread terminates the
 * process), so a disagreement must fail here, on every rank alike. */
void agree(PtoGlooGroup *g, CallKind kind, uint64_t size, uint64_t root) {
  size_t N = static_cast<size_t>(g->nranks);
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
      throw Error(PTO_ERR_RANKS_DISAGREE, "rank " + std::to_string(k) + " calls " + describe(theirs) + ", rank " +
                                              std::to_string(g->rank) + " " + describe(mine));
  }
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
    ptogloo::StoreClient &store = *g->health;

    /* every rank checks its group size against rank 0's */
    std::string n = std::to_string(nranks);
    store.set("nranks/" + std::to_string(rank), std::vector<char>(n.begin(), n.end()));
    std::vector<char> n0 = store.get("nranks/0");
    if (std::string(n0.begin(), n0.end()) != n)
      throw Error(PTO_ERR_RANKS_DISAGREE, "rank " + std::to_string(rank) + " opens a group of " + n +
                                              " ranks, rank 0 one of " + std::string(n0.begin(), n0.end()));

    gloo::transport::tcp::attr attr;
    attr.hostname = bind_addr;
    attr.ai_family = AF_INET;
    g->device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(g->timeout);
    context->connectFullMesh(store, g->device);
    g->context = context;
    learn_peers(g, store);

    /* return only once every rank is connected */
    gloo::BarrierOptions barrier(g->context);
    barrier.setTag(0);
    barrier.setTimeout(g->timeout);
    gloo::barrier(barrier);
    store.hello(rank);
    *out = group.release();
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_open", name_peer, g);
  }
}

PTO_GLOO_EXPORT int ptorun_gloo_allreduce_sum_f32(PtoGlooGroup *g, float *data, size_t count) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if (!data && count > 0) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_allreduce_sum_f32: data is NULL");
  try {
    agree(g, kAllreduce, count, 0);
    if (count == 0) return PTO_OK;
    size_t N = static_cast<size_t>(g->nranks);
    size_t r = static_cast<size_t>(g->rank);
    std::vector<int64_t> counts(N);
    std::vector<size_t> gathered(N);
    for (size_t k = 0; k < N; k++) {
      gathered[k] = chunk_bound(k + 1, count, N) - chunk_bound(k, count, N);
      counts[k] = static_cast<int64_t>(gathered[k]);
    }
    size_t mine = gathered[r];
    float *pieces = scratch(g, (N + 1) * mine + 1);
    float *sum = pieces + N * mine;
    exchange_and_sum(g, data, counts, pieces, sum, mine);
    gloo::AllgathervOptions opts(g->context);
    opts.setInput(sum, mine);
    opts.setOutput(data, gathered);
    sequence(g, opts);
    gloo::allgatherv(opts);
    return PTO_OK;
  } catch (...) {
    return ptogloo::fail_current("ptorun_gloo_allreduce_sum_f32", name_peer, g);
  }
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
    size_t N = static_cast<size_t>(g->nranks);
    std::vector<int64_t> counts(N, static_cast<int64_t>(count_per_rank));
    float *pieces = scratch(g, N * count_per_rank);
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

PTO_GLOO_EXPORT int ptorun_gloo_broadcast(PtoGlooGroup *g, void *data, size_t bytes, int root) {
  int rc = check_group(g);
  if (rc != PTO_OK) return rc;
  if (root < 0 || root >= g->nranks)
    return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_broadcast: root " + std::to_string(root) +
                                                       " not in a group of " + std::to_string(g->nranks));
  if (!data && bytes > 0) return ptogloo::fail(PTO_ERR_INVALID_ARGUMENT, "ptorun_gloo_broadcast: data is NULL");
  try {
    agree(g, kBroadcast, bytes, static_cast<uint64_t>(root));
    if (bytes == 0) return PTO_OK;
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
