#include "admin/http_listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "common/strings.h"
#include "httplib.h"

namespace cxds {

struct HttpListener::Connection {
  int fd = -1;
  std::string in;            // bytes received and not yet handled
  size_t request_end = 0;    // set when `in` starts with a whole request: its length
  SteadyTime deadline;       // a whole request must be in by then
  int served = 0;            // requests answered on this connection
  bool peer_closed = false;  // the client shut its side down after sending
};

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string Canned(int code, const char* reason, const char* body) {
  return StrCat("HTTP/1.1 ", code, " ", reason, "\r\nContent-Type: text/plain\r\nContent-Length: ", std::strlen(body),
                "\r\nConnection: close\r\n\r\n", body);
}

const std::string& Busy() {
  static const std::string* text =
      new std::string(Canned(503, "Service Unavailable", "admin server busy: too many connections\n"));
  return *text;
}
const std::string& HeadersTooLarge() {
  static const std::string* text =
      new std::string(Canned(431, "Request Header Fields Too Large", "request headers too large\n"));
  return *text;
}
const std::string& BodyTooLarge() {
  static const std::string* text = new std::string(Canned(413, "Payload Too Large", "request too large\n"));
  return *text;
}
const std::string& BadRequest() {
  static const std::string* text = new std::string(Canned(400, "Bad Request", "bad Content-Length\n"));
  return *text;
}

enum class Framing { kIncomplete, kComplete, kHeadersTooLarge, kBodyTooLarge, kBad };

// Whether `in` starts with a whole request (request line, headers, Content-Length body); its
// length in `*end`. Chunked bodies are not framed here (the admin pages take no body): such a
// request reaches the handler with the bytes received so far.
Framing FrameRequest(const std::string& in, size_t max_bytes, size_t* end) {
  const size_t blank = in.find("\r\n\r\n");
  if (blank == std::string::npos) return in.size() >= max_bytes ? Framing::kHeadersTooLarge : Framing::kIncomplete;
  const size_t header_end = blank + 4;
  if (header_end > max_bytes) return Framing::kHeadersTooLarge;
  uint64_t body = 0;
  bool has_length = false;
  size_t line = in.find("\r\n") + 2;  // after the request line
  while (line < blank + 2) {
    const size_t line_end = in.find("\r\n", line);
    const std::string_view header(in.data() + line, line_end - line);
    line = line_end + 2;
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name(absl::StripAsciiWhitespace(std::string(header.substr(0, colon))));
    if (!absl::EqualsIgnoreCase(name, "content-length")) continue;
    const std::string value(absl::StripAsciiWhitespace(std::string(header.substr(colon + 1))));
    uint64_t length = 0;
    // Two different lengths would frame the request differently here and in httplib.
    if (!absl::SimpleAtoi(value, &length) || (has_length && length != body)) return Framing::kBad;
    body = length;
    has_length = true;
  }
  if (body > max_bytes - header_end) return Framing::kBodyTooLarge;
  if (in.size() < header_end + body) return Framing::kIncomplete;
  *end = header_end + static_cast<size_t>(body);
  return Framing::kComplete;
}

int MillisUntil(SteadyClock::time_point deadline, SteadyClock::time_point now) {
  if (deadline <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<int64_t>(ms, 60'000));
}

SteadyClock::duration ToSteady(absl::Duration d) {
  return std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(d));
}

void AddressOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ip.clear();
  port = 0;
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    if (inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) != nullptr) ip = text;
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text)) != nullptr) ip = text;
    port = ntohs(v6->sin6_port);
  }
}

// One whole request for httplib to read (never a read from the socket: the request is in the
// buffer already), and the response written to the socket within a deadline.
class BufferedStream final : public httplib::Stream {
 public:
  BufferedStream(int fd, std::string_view request, int stop_fd, SteadyClock::time_point write_deadline)
      : fd_(fd), request_(request), stop_fd_(stop_fd), write_deadline_(write_deadline) {}

  bool is_readable() const override { return read_ < request_.size(); }
  bool is_writable() const override { return !failed_; }

  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - read_);
    std::memcpy(ptr, request_.data() + read_, n);
    read_ += n;
    return static_cast<ssize_t>(n);  // 0 at the end: httplib sees the client's side as done
  }

  ssize_t write(const char* ptr, size_t size) override {
    size_t sent = 0;
    while (sent < size && !failed_) {
      const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // The client reads slowly: wait for room until the deadline, or until Stop.
        const int wait = MillisUntil(write_deadline_, SteadyClock::now());
        pollfd fds[2] = {{fd_, POLLOUT, 0}, {stop_fd_, POLLIN, 0}};
        const int rc = wait == 0 ? 0 : ::poll(fds, 2, wait);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0 || fds[1].revents != 0) failed_ = true;
      } else {
        failed_ = true;
      }
    }
    return failed_ ? -1 : static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { AddressOf(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { AddressOf(fd_, false, ip, port); }
  // httplib's server only uses this to refuse sockets that select() cannot watch; this stream
  // never selects (it polls), so it reports none.
  socket_t socket() const override { return INVALID_SOCKET; }

  bool failed() const { return failed_; }

 private:
  const int fd_;
  const std::string_view request_;
  const int stop_fd_;
  const SteadyClock::time_point write_deadline_;
  size_t read_ = 0;
  bool failed_ = false;
};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

HttpListener::HttpListener(AdminLimits limits, Handler handler) : limits_(limits), handler_(std::move(handler)) {}

HttpListener::~HttpListener() { Stop(); }

absl::Status HttpListener::Start(const std::string& host, int port) {
  std::string bare = host;
  if (bare.size() >= 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  const std::string where = StrCat(host, ":", port);
  if (port < 0 || port > 65535) return absl::InvalidArgumentError(StrCat("admin: bad port in ", where));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(bare.empty() ? nullptr : bare.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(StrCat("admin: cannot listen on ", where, ": ", gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR lets a restart bind over connections in TIME_WAIT; unlike SO_REUSEPORT (which
    // httplib sets) it never lets a second process listen on the same port.
    const int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
      error = std::strerror(errno);
      CloseFd(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) return absl::UnavailableError(StrCat("admin: cannot listen on ", where, ": ", error));

  std::string ip;
  AddressOf(listen_fd_, false, ip, port_);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0 || wake_fd_ < 0) {
    const std::string reason = std::strerror(errno);
    CloseFd(listen_fd_);
    CloseFd(stop_fd_);
    CloseFd(wake_fd_);
    return absl::InternalError(StrCat("admin: eventfd: ", reason));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
  }
  poll_thread_ = std::thread([this] { PollLoop(); });
  for (int i = 0; i < std::max(1, limits_.threads); ++i) handler_threads_.emplace_back([this] { HandlerLoop(); });
  return absl::OkStatus();
}

void HttpListener::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopping_) return;
    stopping_ = true;
  }
  const uint64_t one = 1;
  // The stop event stays set: the poll loop and any handler waiting to write see it.
  [[maybe_unused]] ssize_t ignored = ::write(stop_fd_, &one, sizeof(one));
  ready_cv_.notify_all();
  poll_thread_.join();
  for (std::thread& t : handler_threads_) t.join();
  handler_threads_.clear();
  for (auto& conn : waiting_) CloseFd(conn->fd);
  for (auto& conn : ready_) CloseFd(conn->fd);
  for (auto& conn : returned_) CloseFd(conn->fd);
  for (Closing& c : closing_) CloseFd(c.fd);
  waiting_.clear();
  ready_.clear();
  returned_.clear();
  closing_.clear();
  open_ = 0;
  CloseFd(listen_fd_);
  CloseFd(stop_fd_);
  CloseFd(wake_fd_);
}

void HttpListener::CloseConnection(Connection& conn) {
  if (conn.fd < 0) return;
  ::shutdown(conn.fd, SHUT_WR);
  CloseFd(conn.fd);
  open_.fetch_sub(1);
}

void HttpListener::Refuse(int fd, const char* response, SteadyTime now) {
  // Closing with unread request bytes sends an RST, which can destroy the response before the
  // client reads it; so the client's bytes are drained, now and for a short while after.
  // Bounded: past max_connections refused connections are closed at once.
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
  }
  [[maybe_unused]] ssize_t ignored = ::send(fd, response, std::strlen(response), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  if (closing_.size() < static_cast<size_t>(std::max(1, limits_.max_connections))) {
    const SteadyTime::duration drain = std::min(ToSteady(limits_.read_timeout), ToSteady(absl::Seconds(2)));
    closing_.push_back({fd, now + drain});
  } else {
    ::close(fd);
  }
}

bool HttpListener::AcceptAll(SteadyTime now) {
  // Bounded per round, so the other connections are served between bursts.
  for (int i = 0; i < 256; ++i) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EAGAIN: none left. Out of descriptors (EMFILE...): the caller pauses accepting.
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (open_.load() >= limits_.max_connections) {
      rejected_.fetch_add(1);
      Refuse(fd, Busy().c_str(), now);
      continue;
    }
    const int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));  // headers and body are two writes
    open_.fetch_add(1);
    auto conn = std::make_unique<Connection>();
    conn->fd = fd;
    conn->deadline = now + ToSteady(limits_.read_timeout);
    waiting_.push_back(std::move(conn));
  }
  return true;
}

bool HttpListener::ReadFrom(Connection& conn, SteadyTime now) {
  char buffer[16 * 1024];
  while (!conn.peer_closed && conn.in.size() < limits_.max_request_bytes) {
    const size_t room = std::min(sizeof(buffer), limits_.max_request_bytes - conn.in.size());
    const ssize_t n = ::recv(conn.fd, buffer, room, 0);
    if (n > 0) {
      conn.in.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      conn.peer_closed = true;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else {
      CloseConnection(conn);
      return false;
    }
  }
  size_t end = 0;
  const Framing framing = FrameRequest(conn.in, limits_.max_request_bytes, &end);
  if (framing == Framing::kComplete) {
    conn.request_end = end;
    return false;  // the caller dispatches it
  }
  if (framing == Framing::kIncomplete) {
    if (!conn.peer_closed) return true;
    CloseConnection(conn);  // gone before a whole request
    return false;
  }
  const std::string& response = framing == Framing::kHeadersTooLarge ? HeadersTooLarge()
                                : framing == Framing::kBodyTooLarge  ? BodyTooLarge()
                                                                     : BadRequest();
  const int fd = conn.fd;
  conn.fd = -1;
  open_.fetch_sub(1);
  Refuse(fd, response.c_str(), now);
  return false;
}

void HttpListener::Dispatch(std::unique_ptr<Connection> conn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(conn));
  }
  ready_cv_.notify_one();
}

void HttpListener::Finish(std::unique_ptr<Connection> conn, bool keep) {
  if (keep) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      conn->deadline = SteadyClock::now() + ToSteady(limits_.read_timeout);
      returned_.push_back(std::move(conn));
    }
  }
  if (conn == nullptr) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    return;
  }
  CloseConnection(*conn);
}

void HttpListener::HandlerLoop() {
  for (;;) {
    std::unique_ptr<Connection> conn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
      if (stopping_) return;
      conn = std::move(ready_.front());
      ready_.pop_front();
    }
    const bool close_connection = conn->peer_closed || conn->served + 1 >= limits_.max_requests_per_connection;
    BufferedStream stream(conn->fd, std::string_view(conn->in).substr(0, conn->request_end), stop_fd_,
                          SteadyClock::now() + ToSteady(limits_.write_timeout));
    bool connection_closed = false;
    bool ok = false;
    try {
      ok = handler_(stream, close_connection, connection_closed);
    } catch (...) {
      ok = false;  // nothing escapes a handler thread; the connection is dropped
    }
    conn->served++;
    // Whatever the handler read, the request ends here (httplib skips a GET's body).
    conn->in.erase(0, conn->request_end);
    conn->request_end = 0;
    Finish(std::move(conn), ok && !stream.failed() && !close_connection && !connection_closed);
  }
}

void HttpListener::PollLoop() {
  std::vector<pollfd> fds;
  SteadyTime accept_resumes{};
  for (;;) {
    SteadyTime now = SteadyClock::now();
    std::vector<std::unique_ptr<Connection>> back;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      back.swap(returned_);
    }
    for (auto& conn : back) {
      // A kept-alive connection may hold its next request already (pipelining).
      if (ReadFrom(*conn, now)) {
        waiting_.push_back(std::move(conn));
      } else if (conn->fd >= 0) {
        Dispatch(std::move(conn));
      }
    }

    fds.clear();
    fds.push_back({stop_fd_, POLLIN, 0});
    fds.push_back({wake_fd_, POLLIN, 0});
    const bool accepting = now >= accept_resumes;
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    SteadyTime next = now + std::chrono::seconds(60);
    if (!accepting) next = std::min(next, accept_resumes);
    for (const auto& conn : waiting_) {
      fds.push_back({conn->fd, POLLIN, 0});
      next = std::min(next, conn->deadline);
    }
    for (const Closing& c : closing_) {
      fds.push_back({c.fd, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    const size_t polled_closing = closing_.size();
    const int rc = ::poll(fds.data(), fds.size(), MillisUntil(next, now));
    if (rc < 0 && errno != EINTR) {
      // Cannot happen with valid descriptors; do not spin.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    now = SteadyClock::now();
    if (fds[0].revents != 0) return;  // Stop cleans up
    if (fds[1].revents != 0) {
      uint64_t count = 0;
      [[maybe_unused]] ssize_t ignored = ::read(wake_fd_, &count, sizeof(count));
    }

    size_t index = 3;
    for (auto& conn : waiting_) {
      const short events = fds[index++].revents;
      if (events == 0) continue;
      if (!ReadFrom(*conn, now)) {
        if (conn->fd >= 0) Dispatch(std::move(conn));
        conn = nullptr;
      }
    }
    // Only those polled: refusals above may have added more.
    for (size_t i = 0; i < polled_closing; ++i) {
      Closing& c = closing_[i];
      const short events = fds[index++].revents;
      if (events == 0) continue;
      char sink[4096];
      ssize_t n = 0;
      while ((n = ::recv(c.fd, sink, sizeof(sink), 0)) > 0) {
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) CloseFd(c.fd);
    }

    for (auto& conn : waiting_) {
      if (conn != nullptr && conn->deadline <= now) {
        timed_out_.fetch_add(1);
        CloseConnection(*conn);
        conn = nullptr;
      }
    }
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), nullptr), waiting_.end());
    for (Closing& c : closing_) {
      if (c.fd >= 0 && c.deadline <= now) CloseFd(c.fd);
    }
    closing_.erase(std::remove_if(closing_.begin(), closing_.end(), [](const Closing& c) { return c.fd < 0; }),
                   closing_.end());

    if (accepting && fds[2].revents != 0) {
      // Out of descriptors (EMFILE): the socket stays readable; pause rather than spin.
      if (!AcceptAll(now)) accept_resumes = now + std::chrono::milliseconds(100);
    }
  }
}

}  // namespace cxds
