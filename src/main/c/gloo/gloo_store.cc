#include "gloo/gloo_store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <set>

#include "gloo/gloo_error.h"

namespace ptogloo {

namespace {

constexpr uint8_t kOk = 0;
constexpr uint8_t kMissing = 1;
constexpr uint8_t kOtherGroup = 2;
constexpr uint8_t kBadRequest = 3;
constexpr size_t kMaxFrame = 64u << 20;
constexpr size_t kGroupIdChars = 32;

using Clock = std::chrono::steady_clock;

std::string sys_error(int err) {
  char buf[128];
  return std::string(strerror_r(err, buf, sizeof buf));
}

std::string endpoint_text(const struct sockaddr_in &at) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &at.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(at.sin_port));
}

void put_u32(std::vector<char> &out, uint32_t v) {
  for (int i = 0; i < 4; i++) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

void put_bytes(std::vector<char> &out, const char *p, size_t n) {
  put_u32(out, static_cast<uint32_t>(n));
  out.insert(out.end(), p, p + n);
}

/* A reader over a request's fields; ok() turns false on a short frame. */
struct Reader {
  const char *p;
  size_t left;
  bool good = true;
  bool ok() const { return good; }
  uint32_t u32() {
    if (left < 4) { good = false; return 0; }
    uint32_t v = get_u32(p);
    p += 4; left -= 4;
    return v;
  }
  std::string bytes() {
    uint32_t n = u32();
    if (!good || left < n) { good = false; return std::string(); }
    std::string s(p, n);
    p += n; left -= n;
    return s;
  }
};

/* Blocking send of the whole buffer; false when the peer is gone. */
bool send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool send_frame(int fd, const std::vector<char> &payload) {
  std::vector<char> frame;
  frame.reserve(payload.size() + 4);
  put_u32(frame, static_cast<uint32_t>(payload.size()));
  frame.insert(frame.end(), payload.begin(), payload.end());
  return send_all(fd, frame.data(), frame.size());
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

struct in_addr parse_ipv4(const std::string &text) {
  struct in_addr a;
  if (inet_pton(AF_INET, text.c_str(), &a) != 1)
    throw Error(PTO_ERR_INVALID_ARGUMENT, "not an IPv4 address: '" + text + "'");
  return a;
}

struct sockaddr_in parse_endpoint(const std::string &text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    throw Error(PTO_ERR_INVALID_ARGUMENT, "not <ipv4>:<port>: '" + text + "'");
  std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) == 0 || std::stoul(port) > 65535)
    throw Error(PTO_ERR_INVALID_ARGUMENT, "bad port in '" + text + "'");
  struct sockaddr_in at;
  memset(&at, 0, sizeof at);
  at.sin_family = AF_INET;
  at.sin_addr = parse_ipv4(text.substr(0, colon));
  at.sin_port = htons(static_cast<uint16_t>(std::stoul(port)));
  return at;
}

/* ---- the server ---- */

StoreServer::StoreServer(const struct sockaddr_in &at, const std::string &group_id) : group_id_(group_id) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw Error(PTO_ERR_FAILED, "store socket: " + sys_error(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listen_fd_, reinterpret_cast<const struct sockaddr *>(&at), sizeof at) != 0 || listen(listen_fd_, 128) != 0) {
    int err = errno;
    close(listen_fd_);
    throw Error(PTO_ERR_FAILED, "cannot serve the store at " + endpoint_text(at) + ": " + sys_error(err));
  }
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    int err = errno;
    close(listen_fd_);
    throw Error(PTO_ERR_FAILED, "store eventfd: " + sys_error(err));
  }
  try {
    thread_ = std::thread(&StoreServer::serve, this);
  } catch (...) {
    close(listen_fd_);
    close(stop_fd_);
    throw;
  }
}

StoreServer::~StoreServer() {
  uint64_t one = 1;
  ssize_t w = write(stop_fd_, &one, sizeof one);
  (void)w;
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(stop_fd_);
}

struct StoreServer::Conn {
  int fd;
  std::string in;
  bool waiting = false;
  std::vector<std::string> wait_keys; /* full keys */
  bool dead = false;
  int rank = -1;              /* the health lane of this rank ('H') */
  bool left = false;          /* it said 'B' */
  bool waiting_lost = false;  /* an 'L' parked until a rank is lost */
  std::vector<int> lost_among; /* the ranks that 'L' asks about (empty: any) */
};

namespace {

using Conn = StoreServer::Conn;

bool all_set(const std::map<std::string, std::vector<char>> &kv, const std::vector<std::string> &keys) {
  for (const auto &k : keys)
    if (kv.find(k) == kv.end()) return false;
  return true;
}

bool reply(Conn &c, uint8_t status, const std::vector<char> *value = nullptr) {
  std::vector<char> payload;
  payload.push_back(static_cast<char>(status));
  if (value) payload.insert(payload.end(), value->begin(), value->end());
  return send_frame(c.fd, payload);
}

/* The lost ranks c's 'L' asks about. */
std::set<int> lost_for(const Conn &c, const std::set<int> &lost) {
  if (c.lost_among.empty()) return lost;
  std::set<int> some;
  for (int r : c.lost_among)
    if (lost.count(r)) some.insert(r);
  return some;
}

bool reply_lost(Conn &c, const std::set<int> &lost) {
  std::vector<char> value;
  put_u32(value, static_cast<uint32_t>(lost.size()));
  for (int r : lost) put_u32(value, static_cast<uint32_t>(r));
  return reply(c, kOk, &value);
}

/* What the store knows: the keys, and the ranks whose health lane closed
   without a goodbye. */
struct Known {
  std::map<std::string, std::vector<char>> kv;
  std::set<int> lost;
};

/* One request of c; sets *changed when it set a key. false: drop c. */
bool handle(Conn &c, const std::string &group_id, const char *p, size_t n, Known &known, bool *changed) {
  std::map<std::string, std::vector<char>> &kv = known.kv;
  if (n < 1 + kGroupIdChars) return reply(c, kBadRequest) && false;
  char op = p[0];
  if (std::string(p + 1, kGroupIdChars) != group_id) return reply(c, kOtherGroup);
  Reader r{p + 1 + kGroupIdChars, n - 1 - kGroupIdChars};
  std::string prefix = group_id + "/";
  if (op == 'S') {
    std::string key = r.bytes();
    std::string value = r.bytes();
    if (!r.ok()) return reply(c, kBadRequest) && false;
    kv[prefix + key] = std::vector<char>(value.begin(), value.end());
    *changed = true;
    return reply(c, kOk);
  }
  if (op == 'G') {
    std::string key = r.bytes();
    if (!r.ok()) return reply(c, kBadRequest) && false;
    auto it = kv.find(prefix + key);
    if (it == kv.end()) return reply(c, kMissing);
    return reply(c, kOk, &it->second);
  }
  if (op == 'W') {
    uint32_t count = r.u32();
    std::vector<std::string> keys;
    for (uint32_t i = 0; r.ok() && i < count; i++) keys.push_back(prefix + r.bytes());
    if (!r.ok()) return reply(c, kBadRequest) && false;
    if (all_set(kv, keys)) return reply(c, kOk);
    c.waiting = true;
    c.wait_keys = std::move(keys);
    return true;
  }
  if (op == 'H') {
    uint32_t rank = r.u32();
    if (!r.ok() || rank > INT32_MAX) return reply(c, kBadRequest) && false;
    c.rank = static_cast<int>(rank);
    return reply(c, kOk);
  }
  if (op == 'B') { /* no answer: the client closes right after it */
    c.left = true;
    return true;
  }
  if (op == 'L') {
    c.lost_among.clear();
    if (r.left > 0) {
      uint32_t count = r.u32();
      for (uint32_t i = 0; r.ok() && i < count; i++) c.lost_among.push_back(static_cast<int>(r.u32()));
      if (!r.ok()) return reply(c, kBadRequest) && false;
    }
    std::set<int> lost = lost_for(c, known.lost);
    if (!lost.empty()) return reply_lost(c, lost);
    c.waiting_lost = true;
    return true;
  }
  return reply(c, kBadRequest) && false;
}

/* Reads what c has and answers its complete requests. false: drop c. */
bool serve_readable(Conn &c, const std::string &group_id, Known &known, bool *changed) {
  char buf[65536];
  ssize_t got = recv(c.fd, buf, sizeof buf, 0);
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got == 0) return false;
  c.in.append(buf, static_cast<size_t>(got));
  size_t used = 0;
  while (c.in.size() - used >= 4) {
    size_t len = get_u32(c.in.data() + used);
    if (len > kMaxFrame) return false;
    if (c.in.size() - used - 4 < len) break;
    if (!handle(c, group_id, c.in.data() + used + 4, len, known, changed)) return false;
    used += 4 + len;
  }
  c.in.erase(0, used);
  return true;
}

}  // namespace

void StoreServer::serve() {
  std::vector<Conn> conns;
  try {
    serve_loop(conns);
  } catch (...) {
    /* out of memory: the store stops, its clients time out naming it */
  }
  for (auto &c : conns) close(c.fd);
  conns.clear();
  publish_open_lanes(conns);
}

void StoreServer::publish_open_lanes(const std::vector<Conn> &conns) {
  int open = 0, clients = 0;
  for (const auto &c : conns) {
    open += c.rank >= 0 && !c.left && !c.dead;
    clients += !c.dead;
  }
  std::lock_guard<std::mutex> hold(lanes_lock_);
  if (open != open_lanes_ || clients != open_clients_ || !lanes_known_) {
    open_lanes_ = open;
    open_clients_ = clients;
    lanes_known_ = true;
    lanes_changed_.notify_all();
  }
}

void StoreServer::await_lanes_closed(std::chrono::milliseconds max) {
  std::unique_lock<std::mutex> hold(lanes_lock_);
  lanes_changed_.wait_for(hold, max, [this] { return lanes_known_ && open_lanes_ == 0; });
}

void StoreServer::await_clients_gone(std::chrono::milliseconds max) {
  std::unique_lock<std::mutex> hold(lanes_lock_);
  lanes_changed_.wait_for(hold, max, [this] { return lanes_known_ && open_clients_ == 0; });
}

void StoreServer::serve_loop(std::vector<Conn> &conns) {
  Known known;
  std::map<std::string, std::vector<char>> &kv = known.kv;
  std::vector<struct pollfd> pfds;
  for (;;) {
    pfds.clear();
    pfds.push_back({stop_fd_, POLLIN, 0});
    pfds.push_back({listen_fd_, POLLIN, 0});
    for (const auto &c : conns) pfds.push_back({c.fd, POLLIN, 0});
    if (poll(pfds.data(), pfds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pfds[0].revents) break;
    bool changed = false;
    for (size_t i = 0; i + 2 < pfds.size(); i++) {
      Conn &c = conns[i];
      if (!pfds[i + 2].revents) continue;
      try {
        if (!serve_readable(c, group_id_, known, &changed)) c.dead = true;
      } catch (...) { /* out of memory: drop this client, keep serving */
        c.dead = true;
      }
    }
    if (changed) {
      for (auto &c : conns) {
        if (c.dead || !c.waiting || !all_set(kv, c.wait_keys)) continue;
        c.waiting = false;
        c.wait_keys.clear();
        if (!reply(c, kOk)) c.dead = true;
      }
    }
    bool lost_more = false;
    for (size_t i = 0; i < conns.size();) {
      if (conns[i].dead) {
        if (conns[i].rank >= 0 && !conns[i].left) lost_more |= known.lost.insert(conns[i].rank).second;
        close(conns[i].fd);
        conns.erase(conns.begin() + static_cast<long>(i));
      } else {
        i++;
      }
    }
    if (lost_more) {
      for (auto &c : conns) {
        if (!c.waiting_lost) continue;
        std::set<int> lost = lost_for(c, known.lost);
        if (lost.empty()) continue; /* none it asks about */
        c.waiting_lost = false;
        if (!reply_lost(c, lost)) c.dead = true; /* dropped on the next round */
      }
    }
    publish_open_lanes(conns);
    if (pfds[1].revents & POLLIN) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        set_nodelay(fd);
        try {
          conns.push_back(Conn{fd, std::string(), false, {}, false, -1, false, false, {}});
        } catch (...) {
          close(fd);
        }
      }
    }
  }
}

/* ---- the client ---- */

StoreClient::StoreClient(const struct sockaddr_in &at, const std::string &group_id, std::chrono::milliseconds timeout)
    : at_(at), group_id_(group_id), timeout_(timeout) {
  connect_until(Clock::now() + timeout_);
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

std::string StoreClient::where() const { return "the store at " + endpoint_text(at_); }

void StoreClient::connect_until(Clock::time_point deadline) {
  std::string last = "no attempt";
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw Error(PTO_ERR_FAILED, "store client socket: " + sys_error(errno));
    int err = 0;
    if (connect(fd, reinterpret_cast<const struct sockaddr *>(&at_), sizeof at_) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        struct pollfd pfd = {fd, POLLOUT, 0};
        int n = poll(&pfd, 1, left > 0 ? static_cast<int>(left) : 0);
        if (n == 1) {
          socklen_t len = sizeof err;
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        } else {
          err = ETIMEDOUT;
        }
      }
    }
    if (err == 0) {
      int flags = fcntl(fd, F_GETFL);
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      set_nodelay(fd);
      fd_ = fd;
      return;
    }
    close(fd);
    last = sys_error(err);
    auto now = Clock::now();
    if (now >= deadline)
      throw Error(PTO_ERR_TIMEOUT, "could not reach " + where() + " within " + std::to_string(timeout_.count()) +
                                       " ms (last attempt: " + last + ")");
    /* the server may not be up yet: retry a little later */
    auto pause = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(50));
    std::this_thread::sleep_for(pause);
  }
}

std::vector<char> StoreClient::request(const std::vector<char> &payload, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> hold(lock_); /* one request at a time on the connection */
  auto deadline = Clock::now() + timeout;
  if (fd_ < 0) connect_until(deadline);
  if (!send_frame(fd_, payload)) {
    close(fd_);
    fd_ = -1;
    throw Error(PTO_ERR_DEVICE, "lost " + where() + " (rank 0) while sending: " + sys_error(errno));
  }
  std::vector<char> in;
  size_t want = 4;
  bool have_len = false;
  for (;;) {
    while (in.size() < want) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      struct pollfd pfd = {fd_, POLLIN, 0};
      int n = left > 0 ? poll(&pfd, 1, static_cast<int>(left)) : 0;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(fd_); /* the server drops a parked wait with the connection */
        fd_ = -1;
        throw Error(PTO_ERR_TIMEOUT, "no answer from " + where() + " within " + std::to_string(timeout.count()) + " ms");
      }
      char buf[65536];
      size_t room = std::min(sizeof buf, want - in.size());
      ssize_t got = recv(fd_, buf, room, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        std::string why = got == 0 ? std::string("connection closed") : sys_error(errno);
        close(fd_);
        fd_ = -1;
        throw Error(PTO_ERR_DEVICE, "lost " + where() + " (rank 0): " + why);
      }
      in.insert(in.end(), buf, buf + got);
    }
    if (have_len) break;
    size_t len = get_u32(in.data());
    if (len < 1 || len > kMaxFrame) throw Error(PTO_ERR_FAILED, "malformed reply from " + where());
    have_len = true;
    want = 4 + len;
  }
  in.erase(in.begin(), in.begin() + 4);
  uint8_t status = static_cast<uint8_t>(in[0]);
  if (status == kOtherGroup)
    throw Error(PTO_ERR_RANKS_DISAGREE, where() + " serves another group than " + group_id_);
  if (status == kBadRequest) throw Error(PTO_ERR_FAILED, where() + " refused a malformed request");
  return in;
}

namespace {
std::vector<char> head(char op, const std::string &group_id) {
  std::vector<char> p(1 + group_id.size());
  p[0] = op;
  std::memcpy(p.data() + 1, group_id.data(), group_id.size());
  return p;
}
}  // namespace

void StoreClient::set(const std::string &key, const std::vector<char> &data) {
  std::vector<char> p = head('S', group_id_);
  put_bytes(p, key.data(), key.size());
  put_bytes(p, data.data(), data.size());
  std::vector<char> r = request(p, timeout_);
  if (static_cast<uint8_t>(r[0]) != kOk) throw Error(PTO_ERR_FAILED, where() + " did not store key " + key);
}

std::vector<char> StoreClient::get(const std::string &key) {
  wait({key}, timeout_);
  std::vector<char> p = head('G', group_id_);
  put_bytes(p, key.data(), key.size());
  std::vector<char> r = request(p, timeout_);
  if (static_cast<uint8_t>(r[0]) != kOk) throw Error(PTO_ERR_FAILED, where() + " has no key " + key);
  std::vector<char> value(r.begin() + 1, r.end());
  std::lock_guard<std::mutex> hold(lock_);
  seen_[key] = value;
  return value;
}

void StoreClient::wait(const std::vector<std::string> &keys) { wait(keys, timeout_); }

void StoreClient::wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) {
  std::vector<char> p = head('W', group_id_);
  put_u32(p, static_cast<uint32_t>(keys.size()));
  for (const auto &k : keys) put_bytes(p, k.data(), k.size());
  try {
    std::vector<char> r = request(p, timeout);
    if (static_cast<uint8_t>(r[0]) != kOk) throw Error(PTO_ERR_FAILED, where() + " refused a wait");
  } catch (const Error &e) {
    if (e.code() != PTO_ERR_TIMEOUT) throw;
    std::string names;
    for (const auto &k : keys) names += (names.empty() ? "" : ",") + k;
    throw Error(PTO_ERR_TIMEOUT, std::string(e.what()) + " waiting for key(s) " + names +
                                     " (a rank that never joined?)");
  }
}

void StoreClient::hello(int rank) {
  std::vector<char> p = head('H', group_id_);
  put_u32(p, static_cast<uint32_t>(rank));
  std::vector<char> r = request(p, timeout_);
  if (static_cast<uint8_t>(r[0]) != kOk) throw Error(PTO_ERR_FAILED, where() + " refused rank " + std::to_string(rank));
}

void StoreClient::bye() {
  /* posted, not awaited: a close never waits for a store that is gone or cut off */
  std::lock_guard<std::mutex> hold(lock_);
  if (fd_ >= 0) (void)send_frame(fd_, head('B', group_id_));
}

std::map<std::string, std::vector<char>> StoreClient::seen() const {
  std::lock_guard<std::mutex> hold(lock_);
  return seen_;
}

std::unique_ptr<StoreClient> StoreClient::another() const {
  return std::unique_ptr<StoreClient>(new StoreClient(at_, group_id_, timeout_));
}

std::vector<int> StoreClient::lost(std::chrono::milliseconds timeout, const std::vector<int> &among) const {
  StoreClient asker(at_, group_id_, timeout); /* the health lane stays this rank's */
  std::vector<char> p = head('L', group_id_);
  if (!among.empty()) {
    put_u32(p, static_cast<uint32_t>(among.size()));
    for (int r : among) put_u32(p, static_cast<uint32_t>(r));
  }
  std::vector<char> r = asker.request(p, timeout);
  Reader in{r.data() + 1, r.size() - 1};
  uint32_t count = in.u32();
  std::vector<int> ranks;
  for (uint32_t i = 0; in.ok() && i < count; i++) ranks.push_back(static_cast<int>(in.u32()));
  if (!in.ok()) throw Error(PTO_ERR_FAILED, "malformed answer from " + where());
  return ranks;
}

}  // namespace ptogloo
