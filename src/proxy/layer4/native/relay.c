// The layer-4 byte path outside Node's `net`: one thread per proxy process accepts on the process's TCP and TLS
// listeners, connects to the backend the JavaScript side chose, and relays bytes both ways with recv and send
// on one scratch buffer. Node's socket objects cost about 70 µs of CPU per connection and twice nginx's per
// relayed read; this path costs what the kernel costs. Every decision (route, backend, limits, TLS, telemetry)
// stays in JavaScript: the thread tells it what happened in batches (accepted, bytes read before a decision,
// closed with its counts, handed over) and does what it is told (forward, read more, close, hand over).
// Written against Node-API only (node_api.h), whose ABI holds across Node versions: one build serves Node 20
// and the image's Node 26.
#define NAPI_VERSION 8
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <net/if.h>
#include <netdb.h>
#include <node_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// One read's most; a backpressured direction keeps only what its read could not send.
#define SCRATCH_BYTES (64 * 1024)
// Bytes read for the JavaScript side before it decides (a ClientHello); it asks again for more.
#define PEEK_BYTES (16 * 1024)
#define MAX_EPOLL_EVENTS 256
// Accepts per readiness event: a flood of connections on one listener leaves room for the others' bytes.
#define ACCEPTS_PER_EVENT 64
#define MAX_LISTENERS 4096
// Accepted connections JavaScript has not yet heard of, at most: past it the listeners rest until it catches up,
// so a busy JavaScript thread (a long GC, a slow tick) cannot let a flood of connections take every descriptor.
#define MAX_UNDELIVERED_ACCEPTS 1024
// The numbers of one event told to JavaScript: kind, connection id, listener id, then five values.
#define EVENT_FIELDS 8
// How long a listener out of descriptors or memory waits before it accepts again.
#define ACCEPT_PAUSE_MS 100

enum tag_kind { TAG_WAKE, TAG_LISTENER, TAG_CLIENT, TAG_UPSTREAM };
enum conn_state { ST_WAIT, ST_PEEK, ST_CONNECTING, ST_RELAY };
enum event_kind { EV_ACCEPTED = 1, EV_PEEKED = 2, EV_CLOSED = 3, EV_RELEASED = 4, EV_ACCEPT_FAILED = 5 };
enum failure { FAILED_NONE = 0, FAILED_CLIENT = 1, FAILED_UPSTREAM = 2, FAILED_CONNECT = 3 };
enum command_kind { CMD_LISTENER, CMD_FORWARD, CMD_PEEK, CMD_CLOSE, CMD_RELEASE, CMD_CLOSE_LISTENER };

// What an epoll event is for, in its 64 bits: kind (2 bits) and slot (24) low, the connection's generation high,
// so that an event for a connection closed earlier in the same batch finds its slot empty or reused, and is
// dropped, instead of reading freed memory.
static uint64_t tag_of(uint8_t kind, uint32_t slot, uint32_t generation) {
  return ((uint64_t)generation << 32) | ((uint64_t)slot << 2) | kind;
}

// Bytes read from one side that the other could not take yet.
typedef struct pending {
  size_t length;
  size_t offset;
  uint8_t bytes[];
} pending_t;

typedef struct conn {
  uint32_t generation;
  double listener;
  uint8_t state;
  int client_fd;
  int upstream_fd;
  uint32_t slot;
  uint32_t client_interest;
  uint32_t upstream_interest;
  bool client_registered;
  bool upstream_registered;
  pending_t *to_upstream;
  pending_t *to_client;
  bool client_ended;
  bool upstream_ended;
  bool client_shut;
  bool upstream_shut;
  uint8_t failed;
  int error;
  double client_read;
  double client_written;
  double upstream_read;
} conn_t;

typedef struct listener {
  int fd;
  // The id JavaScript knows it by: its slot, plus MAX_LISTENERS for each earlier listener of the slot.
  double id;
  bool peek;
  bool paused;
} listener_t;

// A connect's deadline. One timeout serves the whole relay, so deadlines expire in the order they were set.
typedef struct deadline {
  double id;
  int64_t at_ms;
} deadline_t;

typedef struct event {
  double numbers[EVENT_FIELDS];
  char *text;  // a client address (accepted) or an error message (accept failed)
  uint8_t *bytes;  // bytes read before a decision (peeked)
  size_t length;
} event_t;

typedef struct event_list {
  event_t *items;
  size_t count;
  size_t capacity;
} event_list_t;

typedef struct command {
  uint8_t kind;
  double id;
  int fd;
  bool peek;
  struct sockaddr_storage address;
  socklen_t address_length;
  uint8_t *bytes;
  size_t length;
  struct command *next;
} command_t;

typedef struct relay {
  int epoll_fd;
  int wake_fd;
  pthread_t thread;
  bool running;
  // Set when its environment went (the cleanup hook): a call of the threadsafe function still queued then runs
  // no JavaScript, and the threadsafe function's finalizer frees the relay.
  bool stopped;
  int connect_timeout_ms;
  napi_threadsafe_function tsfn;
  // Shared with the JavaScript thread, under `lock`.
  pthread_mutex_t lock;
  command_t *commands;
  command_t *commands_tail;
  bool stopping;
  event_list_t outbox;
  // Accepts staged or in the outbox, not yet handed to JavaScript; and whether the listeners rest for it.
  atomic_uint undelivered;
  atomic_bool backlog_paused;
  // The thread's own.
  event_list_t staged;
  conn_t **conns;
  uint32_t conn_capacity;
  uint32_t *free_slots;
  uint32_t free_count;
  listener_t listeners[MAX_LISTENERS];
  int64_t accept_resume_ms;
  uint32_t generations;
  deadline_t *deadlines;
  size_t deadline_head;
  size_t deadline_count;
  size_t deadline_capacity;
  uint8_t *scratch;
  // The JavaScript thread's own: each listener slot's current id (-1: free), descriptor, and listeners so far.
  double slot_id[MAX_LISTENERS];
  int slot_fd[MAX_LISTENERS];
  uint32_t slot_uses[MAX_LISTENERS];
} relay_t;

// Connection ids carry a generation so that a command for a connection already gone never reaches its slot's
// next tenant: id = generation * 2^24 + slot.
#define SLOT_BITS 24
#define SLOT_LIMIT (1u << SLOT_BITS)

static double conn_id(uint32_t slot, uint32_t generation) {
  return (double)generation * (double)SLOT_LIMIT + (double)slot;
}

// ---------------------------------------------------------------------------------------------- events out

static void stage(relay_t *r, uint8_t kind, double id, double listener, double a, double b, double c, double d,
                  double e_) {
  event_list_t *list = &r->staged;
  if (list->count == list->capacity) {
    size_t capacity = list->capacity == 0 ? 64 : list->capacity * 2;
    event_t *items = realloc(list->items, capacity * sizeof(event_t));
    if (items == NULL) abort();
    list->items = items;
    list->capacity = capacity;
  }
  event_t *e = &list->items[list->count++];
  e->numbers[0] = kind;
  e->numbers[1] = id;
  e->numbers[2] = listener;
  e->numbers[3] = a;
  e->numbers[4] = b;
  e->numbers[5] = c;
  e->numbers[6] = d;
  e->numbers[7] = e_;
  e->text = NULL;
  e->bytes = NULL;
  e->length = 0;
}

static event_t *last_staged(relay_t *r) { return &r->staged.items[r->staged.count - 1]; }

// Moves the loop turn's events to the outbox; the first event of an empty outbox wakes JavaScript once.
static void flush_events(relay_t *r) {
  if (r->staged.count == 0) return;
  pthread_mutex_lock(&r->lock);
  bool was_empty = r->outbox.count == 0;
  event_list_t *out = &r->outbox;
  if (out->count + r->staged.count > out->capacity) {
    size_t capacity = out->capacity == 0 ? 64 : out->capacity;
    while (capacity < out->count + r->staged.count) capacity *= 2;
    event_t *items = realloc(out->items, capacity * sizeof(event_t));
    if (items == NULL) abort();
    out->items = items;
    out->capacity = capacity;
  }
  memcpy(out->items + out->count, r->staged.items, r->staged.count * sizeof(event_t));
  out->count += r->staged.count;
  pthread_mutex_unlock(&r->lock);
  r->staged.count = 0;
  if (was_empty) napi_call_threadsafe_function(r->tsfn, NULL, napi_tsfn_nonblocking);
}

// ---------------------------------------------------------------------------------------------- connections

static conn_t *conn_by_id(relay_t *r, double id) {
  if (id < 0) return NULL;
  uint64_t whole = (uint64_t)id;
  uint32_t slot = (uint32_t)(whole % SLOT_LIMIT);
  uint32_t generation = (uint32_t)(whole / SLOT_LIMIT);
  if (slot >= r->conn_capacity) return NULL;
  conn_t *c = r->conns[slot];
  return c != NULL && c->generation == generation ? c : NULL;
}

static uint32_t slot_of(relay_t *r, conn_t *c) { return c->slot; }

// Registers what `fd` waits for. `keep`: stays registered with no interest, so that epoll still reports an error
// or hang-up (a reset) on it; otherwise no interest takes it out of epoll (a side whose end was read would be
// reported hung up on every wait).
static void set_interest(relay_t *r, int fd, uint64_t tag, uint32_t *current, bool *registered, uint32_t wanted,
                         bool keep) {
  if (fd < 0) return;
  bool want_registered = wanted != 0 || keep;
  if (*registered == want_registered && (*current == wanted || !want_registered)) return;
  struct epoll_event ev = {.events = wanted, .data.u64 = tag};
  if (!want_registered) epoll_ctl(r->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
  else epoll_ctl(r->epoll_fd, *registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev);
  *current = wanted;
  *registered = want_registered;
}

// What each side waits for, from the connection's state: a side is read while the other can take its bytes,
// and waited on for writing while bytes for it are held.
static void update_interest(relay_t *r, conn_t *c) {
  uint32_t client = 0;
  uint32_t upstream = 0;
  if (c->state == ST_PEEK) client = EPOLLIN;
  if (c->state == ST_CONNECTING) upstream = EPOLLOUT;
  if (c->state == ST_RELAY) {
    if (!c->client_ended && c->to_upstream == NULL) client |= EPOLLIN;
    if (c->to_client != NULL) client |= EPOLLOUT;
    if (!c->upstream_ended && c->to_client == NULL) upstream |= EPOLLIN;
    if (c->to_upstream != NULL) upstream |= EPOLLOUT;
  }
  // Before relaying, the client is watched for a reset even while nothing is read from it.
  bool watch_client = c->state == ST_WAIT || c->state == ST_CONNECTING;
  set_interest(r, c->client_fd, tag_of(TAG_CLIENT, c->slot, c->generation), &c->client_interest,
               &c->client_registered, client, watch_client);
  set_interest(r, c->upstream_fd, tag_of(TAG_UPSTREAM, c->slot, c->generation), &c->upstream_interest,
               &c->upstream_registered, upstream, false);
}

static void free_conn(relay_t *r, conn_t *c) {
  uint32_t slot = slot_of(r, c);
  free(c->to_upstream);
  free(c->to_client);
  r->conns[slot] = NULL;
  r->free_slots[r->free_count++] = slot;
  free(c);
}

// A socket closed with a reset rather than a FIN: the peer learns the other side failed.
static void close_reset(int fd) {
  struct linger hard = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  close(fd);
}

// Closes both sides and tells JavaScript the connection's end, with its counts.
static void finish(relay_t *r, conn_t *c) {
  bool reset = c->failed != FAILED_NONE && c->error == ECONNRESET;
  if (c->client_fd >= 0) {
    if (reset && c->failed == FAILED_UPSTREAM) close_reset(c->client_fd);
    else close(c->client_fd);
  }
  if (c->upstream_fd >= 0) {
    if (reset && c->failed == FAILED_CLIENT) close_reset(c->upstream_fd);
    else close(c->upstream_fd);
  }
  double id = conn_id(slot_of(r, c), c->generation);
  stage(r, EV_CLOSED, id, c->listener, c->client_read, c->client_written, c->upstream_read,
        c->failed, c->error);
  free_conn(r, c);
}

static void fail(relay_t *r, conn_t *c, uint8_t side, int error) {
  if (c->failed == FAILED_NONE) {
    c->failed = side;
    c->error = error;
  }
  finish(r, c);
}

static pending_t *hold(const uint8_t *bytes, size_t length) {
  pending_t *p = malloc(sizeof(pending_t) + length);
  if (p == NULL) abort();
  p->length = length;
  p->offset = 0;
  memcpy(p->bytes, bytes, length);
  return p;
}

// Sends what it can; returns the bytes sent, or -1 with errno on a failed socket.
static ssize_t send_some(int fd, const uint8_t *bytes, size_t length) {
  size_t sent = 0;
  while (sent < length) {
    ssize_t n = send(fd, bytes + sent, length - sent, MSG_NOSIGNAL);
    if (n > 0) sent += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    else return -1;
  }
  return (ssize_t)sent;
}

// Both directions ended and delivered: the connection is done.
static bool settle(relay_t *r, conn_t *c) {
  if (c->client_ended && c->upstream_ended && c->to_client == NULL && c->to_upstream == NULL) {
    finish(r, c);
    return true;
  }
  return false;
}

// Writes what `from` read to the other side; returns false when the connection ended.
static bool pump(relay_t *r, conn_t *c, bool from_client) {
  // A direction whose end was read, or whose last read is still held, reads nothing more until that is done.
  if ((from_client ? c->client_ended : c->upstream_ended) || (from_client ? c->to_upstream : c->to_client) != NULL)
    return true;
  int from = from_client ? c->client_fd : c->upstream_fd;
  int to = from_client ? c->upstream_fd : c->client_fd;
  ssize_t n = recv(from, r->scratch, SCRATCH_BYTES, 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
    fail(r, c, from_client ? FAILED_CLIENT : FAILED_UPSTREAM, errno);
    return false;
  }
  if (n == 0) {
    if (from_client) c->client_ended = true;
    else c->upstream_ended = true;
    // The end goes on once every byte before it did (half-close: the other direction keeps flowing).
    if ((from_client ? c->to_upstream : c->to_client) == NULL) {
      shutdown(to, SHUT_WR);
      if (from_client) c->upstream_shut = true;
      else c->client_shut = true;
    }
    return !settle(r, c);
  }
  if (from_client) c->client_read += (double)n;
  else c->upstream_read += (double)n;
  ssize_t sent = send_some(to, r->scratch, (size_t)n);
  if (sent < 0) {
    fail(r, c, from_client ? FAILED_UPSTREAM : FAILED_CLIENT, errno);
    return false;
  }
  if (!from_client) c->client_written += (double)sent;
  if ((size_t)sent < (size_t)n) {
    pending_t *p = hold(r->scratch + sent, (size_t)n - (size_t)sent);
    if (from_client) c->to_upstream = p;
    else c->to_client = p;
  }
  return true;
}

// Sends held bytes to a side that can take them again; returns false when the connection ended.
static bool drain(relay_t *r, conn_t *c, bool to_client) {
  pending_t **held = to_client ? &c->to_client : &c->to_upstream;
  int fd = to_client ? c->client_fd : c->upstream_fd;
  pending_t *p = *held;
  if (p == NULL) return true;
  ssize_t sent = send_some(fd, p->bytes + p->offset, p->length - p->offset);
  if (sent < 0) {
    fail(r, c, to_client ? FAILED_CLIENT : FAILED_UPSTREAM, errno);
    return false;
  }
  if (to_client) c->client_written += (double)sent;
  p->offset += (size_t)sent;
  if (p->offset < p->length) return true;
  free(p);
  *held = NULL;
  // The source's end waited for these bytes.
  if (to_client ? c->upstream_ended : c->client_ended) {
    shutdown(fd, SHUT_WR);
    if (to_client) c->client_shut = true;
    else c->upstream_shut = true;
  }
  return !settle(r, c);
}

static int64_t now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

// The socket's pending error, or `otherwise` when it has none.
static int socket_error(int fd, int otherwise) {
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  return error != 0 ? error : otherwise;
}

static void connected(relay_t *r, conn_t *c) {
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(c->upstream_fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) {
    fail(r, c, FAILED_CONNECT, error);
    return;
  }
  c->state = ST_RELAY;
  if (c->to_upstream != NULL && !drain(r, c, false)) return;
  update_interest(r, c);
}

// ---------------------------------------------------------------------------------------------- listeners

// A slot for a new connection, growing the table when every slot is taken; false: the table is full.
static bool take_slot(relay_t *r, uint32_t *slot) {
  if (r->free_count == 0) {
    uint32_t capacity = r->conn_capacity * 2;
    if (capacity > SLOT_LIMIT) return false;
    conn_t **conns = realloc(r->conns, capacity * sizeof(conn_t *));
    if (conns == NULL) abort();
    r->conns = conns;
    uint32_t *free_slots = realloc(r->free_slots, capacity * sizeof(uint32_t));
    if (free_slots == NULL) abort();
    r->free_slots = free_slots;
    for (uint32_t s = capacity; s > r->conn_capacity; s--) {
      r->conns[s - 1] = NULL;
      r->free_slots[r->free_count++] = s - 1;
    }
    r->conn_capacity = capacity;
  }
  *slot = r->free_slots[--r->free_count];
  return true;
}

static void peer_text(const struct sockaddr_storage *peer, char *text, size_t size, int *port) {
  text[0] = '\0';
  *port = 0;
  if (peer->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)peer;
    inet_ntop(AF_INET, &in->sin_addr, text, size);
    *port = ntohs(in->sin_port);
  } else if (peer->ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)peer;
    inet_ntop(AF_INET6, &in6->sin6_addr, text, size);
    *port = ntohs(in6->sin6_port);
  }
}

// Takes every listener out of epoll until JavaScript has heard of the connections accepted so far.
static void rest_for_backlog(relay_t *r) {
  atomic_store(&r->backlog_paused, true);
  for (uint32_t i = 0; i < MAX_LISTENERS; i++) {
    listener_t *l = &r->listeners[i];
    if (l->fd < 0 || l->paused) continue;
    epoll_ctl(r->epoll_fd, EPOLL_CTL_DEL, l->fd, NULL);
    l->paused = true;
  }
}

static void accept_some(relay_t *r, uint32_t index) {
  listener_t *l = &r->listeners[index];
  for (int i = 0; i < ACCEPTS_PER_EVENT && l->fd >= 0 && !l->paused; i++) {
    if (atomic_load(&r->undelivered) >= MAX_UNDELIVERED_ACCEPTS) {
      rest_for_backlog(r);
      return;
    }
    struct sockaddr_storage peer;
    socklen_t peer_length = sizeof peer;
    int fd = accept4(l->fd, (struct sockaddr *)&peer, &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINVAL) {
        // Shut by closeListener on the JavaScript thread; its close command follows.
        epoll_ctl(r->epoll_fd, EPOLL_CTL_DEL, l->fd, NULL);
        l->paused = true;
        return;
      }
      if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM) continue;
      // Out of descriptors or memory: the listener rests a moment (a readable listener would otherwise wake the
      // thread again at once), and JavaScript hears of it once per rest.
      stage(r, EV_ACCEPT_FAILED, -1, l->id, errno, 0, 0, 0, 0);
      last_staged(r)->text = strdup(strerror(errno));
      epoll_ctl(r->epoll_fd, EPOLL_CTL_DEL, l->fd, NULL);
      l->paused = true;
      r->accept_resume_ms = now_ms() + ACCEPT_PAUSE_MS;
      return;
    }
    uint32_t slot;
    if (!take_slot(r, &slot)) {
      close(fd);
      continue;
    }
    conn_t *c = calloc(1, sizeof(conn_t));
    if (c == NULL) abort();
    r->generations = (r->generations + 1) % (1u << 28);
    c->generation = r->generations;
    c->listener = l->id;
    c->client_fd = fd;
    c->upstream_fd = -1;
    c->slot = slot;
    r->conns[slot] = c;
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    char text[INET6_ADDRSTRLEN];
    int port;
    peer_text(&peer, text, sizeof text, &port);
    atomic_fetch_add(&r->undelivered, 1);
    stage(r, EV_ACCEPTED, conn_id(slot, c->generation), l->id, port, 0, 0, 0, 0);
    last_staged(r)->text = strdup(text);
    c->state = l->peek ? ST_PEEK : ST_WAIT;
    update_interest(r, c);
  }
}

// Listeners rested after a failed accept take connections again.
static void resume_accepting(relay_t *r) {
  r->accept_resume_ms = 0;
  for (uint32_t i = 0; i < MAX_LISTENERS; i++) {
    listener_t *l = &r->listeners[i];
    if (!l->paused) continue;
    l->paused = false;
    if (l->fd < 0) continue;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag_of(TAG_LISTENER, i, 0)};
    epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, l->fd, &ev);
  }
}

// ---------------------------------------------------------------------------------------------- commands

static void arm_deadline(relay_t *r, conn_t *c) {
  if (r->deadline_count == r->deadline_capacity) {
    size_t capacity = r->deadline_capacity == 0 ? 256 : r->deadline_capacity * 2;
    deadline_t *items = malloc(capacity * sizeof(deadline_t));
    if (items == NULL) abort();
    for (size_t i = 0; i < r->deadline_count; i++)
      items[i] = r->deadlines[(r->deadline_head + i) % r->deadline_capacity];
    free(r->deadlines);
    r->deadlines = items;
    r->deadline_head = 0;
    r->deadline_capacity = capacity;
  }
  deadline_t *d = &r->deadlines[(r->deadline_head + r->deadline_count++) % r->deadline_capacity];
  d->id = conn_id(slot_of(r, c), c->generation);
  d->at_ms = now_ms() + r->connect_timeout_ms;
}

// Fails the connects past their deadline (a connection gone or connected since is skipped); returns the ms to
// the next deadline, or -1 when none is set.
static int expire_deadlines(relay_t *r) {
  int64_t now = now_ms();
  while (r->deadline_count > 0) {
    deadline_t *d = &r->deadlines[r->deadline_head];
    conn_t *c = conn_by_id(r, d->id);
    if (c != NULL && c->state == ST_CONNECTING && d->at_ms > now) return (int)(d->at_ms - now);
    r->deadline_head = (r->deadline_head + 1) % r->deadline_capacity;
    r->deadline_count--;
    if (c != NULL && c->state == ST_CONNECTING) fail(r, c, FAILED_CONNECT, ETIMEDOUT);
  }
  return -1;
}

static void forward(relay_t *r, conn_t *c, command_t *cmd) {
  if (c->state != ST_WAIT && c->state != ST_PEEK) return;
  if (c->state == ST_PEEK) {
    c->state = ST_WAIT;
    update_interest(r, c);
  }
  if (cmd->length > 0) {
    c->to_upstream = hold(cmd->bytes, cmd->length);
  }
  int fd = socket(cmd->address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(r, c, FAILED_CONNECT, errno);
    return;
  }
  int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  c->upstream_fd = fd;
  if (connect(fd, (struct sockaddr *)&cmd->address, cmd->address_length) < 0 && errno != EINPROGRESS) {
    fail(r, c, FAILED_CONNECT, errno);
    return;
  }
  c->state = ST_CONNECTING;
  arm_deadline(r, c);
  update_interest(r, c);
}

static void run_command(relay_t *r, command_t *cmd) {
  if (cmd->kind == CMD_LISTENER || cmd->kind == CMD_CLOSE_LISTENER) {
    uint32_t index = (uint32_t)((uint64_t)cmd->id % MAX_LISTENERS);
    listener_t *l = &r->listeners[index];
    if (cmd->kind == CMD_CLOSE_LISTENER) {
      if (l->id != cmd->id || l->fd < 0) return;
      close(l->fd);
      l->fd = -1;
      l->paused = false;
      return;
    }
    // Its slot's last listener was closed before this one was made (commands run in order): never two at once.
    if (l->fd >= 0) close(l->fd);
    l->fd = cmd->fd;
    l->id = cmd->id;
    l->peek = cmd->peek;
    l->paused = false;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag_of(TAG_LISTENER, index, 0)};
    epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, l->fd, &ev);
    return;
  }
  conn_t *c = conn_by_id(r, cmd->id);
  if (c == NULL) return;
  switch (cmd->kind) {
    case CMD_FORWARD:
      forward(r, c, cmd);
      break;
    case CMD_PEEK:
      if (c->state == ST_WAIT && c->upstream_fd < 0) {
        c->state = ST_PEEK;
        update_interest(r, c);
      }
      break;
    case CMD_CLOSE:
      finish(r, c);
      break;
    case CMD_RELEASE:
      if (c->state == ST_WAIT || c->state == ST_PEEK) {
        set_interest(r, c->client_fd, tag_of(TAG_CLIENT, c->slot, c->generation), &c->client_interest,
                     &c->client_registered, 0, false);
        stage(r, EV_RELEASED, cmd->id, c->listener, c->client_fd, c->client_read, 0, 0, 0);
        c->client_fd = -1;
        free_conn(r, c);
      }
      break;
  }
}

static void free_command(command_t *cmd) {
  free(cmd->bytes);
  free(cmd);
}

static bool run_commands(relay_t *r) {
  uint64_t count;
  while (read(r->wake_fd, &count, sizeof count) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&r->lock);
  command_t *list = r->commands;
  r->commands = NULL;
  r->commands_tail = NULL;
  bool stopping = r->stopping;
  pthread_mutex_unlock(&r->lock);
  while (list != NULL) {
    command_t *next = list->next;
    run_command(r, list);
    free_command(list);
    list = next;
  }
  return !stopping;
}

// ---------------------------------------------------------------------------------------------- the thread

static void on_socket(relay_t *r, uint64_t tag, uint32_t events) {
  uint32_t slot = (uint32_t)(tag & 0xffffffffu) >> 2;
  conn_t *c = slot < r->conn_capacity ? r->conns[slot] : NULL;
  if (c == NULL || c->generation != (uint32_t)(tag >> 32)) return;
  bool client = (tag & 3) == TAG_CLIENT;
  if (c->state == ST_PEEK && client) {
    uint8_t *bytes = malloc(PEEK_BYTES);
    if (bytes == NULL) abort();
    ssize_t n = recv(c->client_fd, bytes, PEEK_BYTES, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      free(bytes);
      return;
    }
    if (n <= 0) {
      free(bytes);
      fail(r, c, FAILED_CLIENT, n == 0 ? 0 : errno);
      return;
    }
    c->client_read += (double)n;
    c->state = ST_WAIT;
    update_interest(r, c);
    stage(r, EV_PEEKED, conn_id(slot, c->generation), c->listener, (double)n, 0, 0, 0, 0);
    last_staged(r)->bytes = bytes;
    last_staged(r)->length = (size_t)n;
    return;
  }
  if (client && c->state != ST_RELAY && c->state != ST_PEEK) {
    // Watched for this only: the client reset or went away before its connection was relayed.
    if (events & (EPOLLERR | EPOLLHUP)) fail(r, c, FAILED_CLIENT, socket_error(c->client_fd, ECONNRESET));
    return;
  }
  if (c->state == ST_CONNECTING) {
    connected(r, c);
    return;
  }
  if (c->state != ST_RELAY) return;
  if ((events & EPOLLERR) && !(events & (EPOLLIN | EPOLLOUT))) {
    // An error with nothing to read or write: no recv or send would clear it, so it ends the connection here.
    fail(r, c, client ? FAILED_CLIENT : FAILED_UPSTREAM, socket_error(client ? c->client_fd : c->upstream_fd, EIO));
    return;
  }
  if (events & EPOLLOUT) {
    if (!drain(r, c, client)) return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    if (!pump(r, c, client)) return;
  }
  update_interest(r, c);
}

static void *run(void *arg) {
  relay_t *r = arg;
  // Named for `top -H` and /proc/PID/task: an operator sees which thread of a proxy moves layer-4 bytes.
  pthread_setname_np(pthread_self(), "portico-l4");
  struct epoll_event events[MAX_EPOLL_EVENTS];
  bool going = true;
  while (going) {
    int timeout = expire_deadlines(r);
    if (atomic_load(&r->backlog_paused) && atomic_load(&r->undelivered) < MAX_UNDELIVERED_ACCEPTS / 2) {
      atomic_store(&r->backlog_paused, false);
      resume_accepting(r);
    }
    if (r->accept_resume_ms > 0) {
      int64_t rest = r->accept_resume_ms - now_ms();
      if (rest <= 0) resume_accepting(r);
      else if (timeout < 0 || rest < timeout) timeout = (int)rest;
    }
    flush_events(r);
    int n = epoll_wait(r->epoll_fd, events, MAX_EPOLL_EVENTS, timeout);
    if (n < 0 && errno != EINTR) {
      // Only a broken epoll descriptor fails here: a relay that silently stopped would hold every connection.
      fprintf(stderr, "portico layer-4 relay: epoll_wait: %s\n", strerror(errno));
      abort();
    }
    for (int i = 0; i < n; i++) {
      uint64_t tag = events[i].data.u64;
      uint8_t kind = tag & 3;
      if (kind == TAG_WAKE) going = run_commands(r) && going;
      else if (kind == TAG_LISTENER) accept_some(r, (uint32_t)(tag & 0xffffffffu) >> 2);
      else on_socket(r, tag, events[i].events);
    }
  }
  // Stopping with its environment: nobody is left to tell.
  for (uint32_t s = 0; s < r->conn_capacity; s++) {
    conn_t *c = r->conns[s];
    if (c == NULL) continue;
    if (c->client_fd >= 0) close(c->client_fd);
    if (c->upstream_fd >= 0) close(c->upstream_fd);
    free_conn(r, c);
  }
  for (uint32_t i = 0; i < MAX_LISTENERS; i++)
    if (r->listeners[i].fd >= 0) close(r->listeners[i].fd);
  return NULL;
}

// ---------------------------------------------------------------------------------------------- JavaScript

static void throw_errno(napi_env env, const char *what, int error) {
  const char *code = error == EADDRINUSE      ? "EADDRINUSE"
                     : error == EACCES        ? "EACCES"
                     : error == EADDRNOTAVAIL ? "EADDRNOTAVAIL"
                     : error == EINVAL        ? "EINVAL"
                     : error == EMFILE        ? "EMFILE"
                                              : "ERELAY";
  char message[256];
  snprintf(message, sizeof message, "%s: %s", what, strerror(error));
  napi_throw_error(env, code, message);
}

static void free_events(event_list_t *list) {
  for (size_t i = 0; i < list->count; i++) {
    event_t *e = &list->items[i];
    free(e->text);
    free(e->bytes);
    // A descriptor handed over that JavaScript never took.
    if (e->numbers[0] == EV_RELEASED) close((int)e->numbers[3]);
  }
  free(list->items);
  *list = (event_list_t){0};
}

// Builds the batch for the JavaScript callback: a Float64Array of EVENT_FIELDS numbers per event, and an array of
// each event's text or bytes (undefined when it has none).
static void call_js(napi_env env, napi_value callback, void *context, void *data) {
  // No environment: the threadsafe function is being torn down, after its finalizer freed the relay.
  if (env == NULL) return;
  relay_t *r = context;
  pthread_mutex_lock(&r->lock);
  event_list_t batch = r->outbox;
  r->outbox = (event_list_t){0};
  pthread_mutex_unlock(&r->lock);
  // A call queued before the environment's cleanup hook stopped the relay, run while Node closes its handles.
  if (r->stopped || batch.count == 0) {
    free_events(&batch);
    return;
  }
  unsigned accepted = 0;
  for (size_t i = 0; i < batch.count; i++)
    if (batch.items[i].numbers[0] == EV_ACCEPTED) accepted++;
  // JavaScript hears of these now: a relay resting for its backlog may accept again.
  if (accepted > 0 && atomic_fetch_sub(&r->undelivered, accepted) - accepted < MAX_UNDELIVERED_ACCEPTS / 2 &&
      atomic_load(&r->backlog_paused)) {
    uint64_t one = 1;
    ssize_t ignored = write(r->wake_fd, &one, sizeof one);
    (void)ignored;
  }
  napi_value buffer, numbers, extras, undefined;
  void *raw = NULL;
  // Node may run a queued call while it tears the environment down (its handles closed before the cleanup hooks
  // ran), when JavaScript values can no longer be made: the batch is dropped then.
  if (napi_get_undefined(env, &undefined) != napi_ok ||
      napi_create_arraybuffer(env, batch.count * EVENT_FIELDS * sizeof(double), &raw, &buffer) != napi_ok ||
      raw == NULL ||
      napi_create_typedarray(env, napi_float64_array, batch.count * EVENT_FIELDS, buffer, 0, &numbers) != napi_ok ||
      napi_create_array_with_length(env, batch.count, &extras) != napi_ok) {
    free_events(&batch);
    return;
  }
  double *out = raw;
  for (size_t i = 0; i < batch.count; i++) {
    event_t *e = &batch.items[i];
    memcpy(out + i * EVENT_FIELDS, e->numbers, sizeof e->numbers);
    napi_value extra;
    void *copy;
    if (e->text != NULL && napi_create_string_utf8(env, e->text, NAPI_AUTO_LENGTH, &extra) == napi_ok)
      napi_set_element(env, extras, (uint32_t)i, extra);
    else if (e->bytes != NULL && napi_create_buffer_copy(env, e->length, e->bytes, &copy, &extra) == napi_ok)
      napi_set_element(env, extras, (uint32_t)i, extra);
    free(e->text);
    free(e->bytes);
  }
  free(batch.items);
  napi_value argv[2] = {numbers, extras};
  // The callback handles each event on its own (native-relay.ts): an exception here is a bug, reported by Node.
  napi_call_function(env, undefined, callback, 2, argv, NULL);
}

static relay_t *the_relay(napi_env env) {
  relay_t *r = NULL;
  napi_get_instance_data(env, (void **)&r);
  return r;
}

static void wake(relay_t *r) {
  uint64_t one = 1;
  ssize_t ignored = write(r->wake_fd, &one, sizeof one);
  (void)ignored;
}

// Everything the relay holds, let go once its thread has stopped and no call of its threadsafe function is left.
static void free_relay(relay_t *r) {
  for (command_t *cmd = r->commands; cmd != NULL;) {
    command_t *next = cmd->next;
    if (cmd->kind == CMD_LISTENER) close(cmd->fd);
    free(cmd->bytes);
    free(cmd);
    cmd = next;
  }
  free_events(&r->staged);
  free_events(&r->outbox);
  if (r->epoll_fd >= 0) close(r->epoll_fd);
  if (r->wake_fd >= 0) close(r->wake_fd);
  pthread_mutex_destroy(&r->lock);
  free(r->conns);
  free(r->free_slots);
  free(r->deadlines);
  free(r->scratch);
  free(r);
}

// The threadsafe function's finalizer: Node calls it after the last queued call, so the relay goes here.
static void finalize_relay(napi_env env, void *data, void *hint) { free_relay(data); }

// The environment goes (its cleanup hook): the thread stops and the threadsafe function is released; the
// relay itself is freed by the finalizer, since Node may still run a queued call while it closes its handles.
static void stop_thread(relay_t *r) {
  if (!r->running) return;
  pthread_mutex_lock(&r->lock);
  r->stopping = true;
  pthread_mutex_unlock(&r->lock);
  wake(r);
  pthread_join(r->thread, NULL);
  r->running = false;
}

static void stop_relay(void *arg) {
  relay_t *r = arg;
  stop_thread(r);
  r->stopped = true;
  napi_release_threadsafe_function(r->tsfn, napi_tsfn_abort);
}

static void enqueue(relay_t *r, command_t *cmd) {
  pthread_mutex_lock(&r->lock);
  cmd->next = NULL;
  bool was_empty = r->commands == NULL;
  if (r->commands_tail != NULL) r->commands_tail->next = cmd;
  else r->commands = cmd;
  r->commands_tail = cmd;
  pthread_mutex_unlock(&r->lock);
  if (was_empty) wake(r);
}

// The started relay, or NULL with a JavaScript error thrown.
static relay_t *started(napi_env env) {
  relay_t *r = the_relay(env);
  if (r == NULL || !r->running) {
    napi_throw_error(env, "ERELAY", "the native relay is not started");
    return NULL;
  }
  return r;
}

// The call's arguments (at most `most`, missing ones undefined) and the started relay; NULL with an error thrown.
static relay_t *call_arguments(napi_env env, napi_callback_info info, size_t most, napi_value *argv) {
  size_t argc = most;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  return started(env);
}

static command_t *new_command(uint8_t kind, double id) {
  command_t *cmd = calloc(1, sizeof(command_t));
  if (cmd == NULL) abort();
  cmd->kind = kind;
  cmd->id = id;
  return cmd;
}

// A connection or listener id: a whole number a double holds exactly; false with a TypeError thrown.
static bool id_argument(napi_env env, napi_value value, double *id) {
  if (napi_get_value_double(env, value, id) != napi_ok || !(*id >= 0) || *id > 9007199254740991.0 ||
      *id != (double)(uint64_t)*id) {
    napi_throw_type_error(env, "EINVAL", "expected an id the relay gave");
    return false;
  }
  return true;
}

// An IP literal (v4, or v6 with an optional %scope) and port 0–65535; false with an error thrown.
static bool address_argument(napi_env env, napi_value host_value, napi_value port_value,
                             struct sockaddr_storage *address, socklen_t *length, char *host, size_t host_size) {
  size_t host_length = 0;
  int32_t port = -1;
  if (napi_get_value_string_utf8(env, host_value, host, host_size, &host_length) != napi_ok ||
      host_length + 1 >= host_size || napi_get_value_int32(env, port_value, &port) != napi_ok || port < 0 ||
      port > 65535) {
    napi_throw_type_error(env, "EINVAL", "expected an IP address and a port from 0 to 65535");
    return false;
  }
  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
  struct addrinfo *found = NULL;
  char service[8];
  snprintf(service, sizeof service, "%d", port);
  if (getaddrinfo(host, service, &hints, &found) != 0 || found == NULL) {
    napi_throw_type_error(env, "EINVAL", "not an IP address");
    return false;
  }
  memcpy(address, found->ai_addr, found->ai_addrlen);
  *length = found->ai_addrlen;
  freeaddrinfo(found);
  return true;
}

// start(onEvents, connectTimeoutMs): the relay of this process (one per Node environment).
static napi_value js_start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (the_relay(env) != NULL) {
    napi_throw_error(env, "ERELAY", "the native relay is already started");
    return NULL;
  }
  int32_t timeout = 0;
  napi_valuetype type;
  if (argc < 2 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function ||
      napi_get_value_int32(env, argv[1], &timeout) != napi_ok) {
    napi_throw_type_error(env, "EINVAL", "expected start(onEvents, connectTimeoutMs)");
    return NULL;
  }
  relay_t *r = calloc(1, sizeof(relay_t));
  if (r == NULL) abort();
  r->epoll_fd = -1;
  r->wake_fd = -1;
  r->connect_timeout_ms = timeout > 0 ? timeout : 10000;
  for (uint32_t i = 0; i < MAX_LISTENERS; i++) {
    r->listeners[i].fd = -1;
    r->slot_id[i] = -1;
    r->slot_fd[i] = -1;
  }
  r->conn_capacity = 1024;
  r->conns = calloc(r->conn_capacity, sizeof(conn_t *));
  r->free_slots = malloc(r->conn_capacity * sizeof(uint32_t));
  r->scratch = malloc(SCRATCH_BYTES);
  if (r->conns == NULL || r->free_slots == NULL || r->scratch == NULL) abort();
  for (uint32_t s = r->conn_capacity; s > 0; s--) r->free_slots[r->free_count++] = s - 1;
  pthread_mutex_init(&r->lock, NULL);
  r->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (r->epoll_fd < 0 || r->wake_fd < 0) {
    throw_errno(env, "native relay", errno);
    free_relay(r);
    return NULL;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag_of(TAG_WAKE, 0, 0)};
  epoll_ctl(r->epoll_fd, EPOLL_CTL_ADD, r->wake_fd, &ev);
  napi_value name;
  napi_create_string_utf8(env, "portico layer-4 relay", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, r, finalize_relay, r, call_js, &r->tsfn) !=
      napi_ok) {
    napi_throw_error(env, "ERELAY", "native relay: no threadsafe function");
    free_relay(r);
    return NULL;
  }
  // Holds the event loop only while JavaScript says the relay has listeners or connections (ref).
  napi_unref_threadsafe_function(env, r->tsfn);
  int error = pthread_create(&r->thread, NULL, run, r);
  if (error != 0) {
    throw_errno(env, "native relay thread", error);
    // Released, the threadsafe function's finalizer frees the relay.
    stop_relay(r);
    return NULL;
  }
  r->running = true;
  napi_set_instance_data(env, r, NULL, NULL);
  napi_add_env_cleanup_hook(env, stop_relay, r);
  return NULL;
}

// listen(host, port, reusePort, peek) → [listener id, address bound, port bound]
static napi_value js_listen(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  relay_t *r = call_arguments(env, info, 4, argv);
  char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
  struct sockaddr_storage address = {0};
  socklen_t length;
  bool reuse_port = false, peek = false;
  if (r == NULL || !address_argument(env, argv[0], argv[1], &address, &length, host, sizeof host)) return NULL;
  napi_get_value_bool(env, argv[2], &reuse_port);
  napi_get_value_bool(env, argv[3], &peek);
  uint32_t index = MAX_LISTENERS;
  for (uint32_t i = 0; i < MAX_LISTENERS; i++)
    if (r->slot_id[i] < 0) {
      index = i;
      break;
    }
  if (index == MAX_LISTENERS) {
    throw_errno(env, "listen: too many listeners", EMFILE);
    return NULL;
  }
  int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw_errno(env, "listen", errno);
    return NULL;
  }
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
  if (bind(fd, (struct sockaddr *)&address, length) < 0 || listen(fd, 511) < 0) {
    int error = errno;
    close(fd);
    throw_errno(env, "listen", error);
    return NULL;
  }
  struct sockaddr_storage bound;
  socklen_t bound_length = sizeof bound;
  getsockname(fd, (struct sockaddr *)&bound, &bound_length);
  int bound_port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                               : ntohs(((struct sockaddr_in *)&bound)->sin_port);
  double id = (double)index + (double)MAX_LISTENERS * (double)r->slot_uses[index]++;
  r->slot_id[index] = id;
  r->slot_fd[index] = fd;
  command_t *cmd = new_command(CMD_LISTENER, id);
  cmd->fd = fd;
  cmd->peek = peek;
  enqueue(r, cmd);
  napi_value result, value;
  napi_create_array_with_length(env, 3, &result);
  napi_create_double(env, id, &value);
  napi_set_element(env, result, 0, value);
  napi_create_string_utf8(env, host, NAPI_AUTO_LENGTH, &value);
  napi_set_element(env, result, 1, value);
  napi_create_int32(env, bound_port, &value);
  napi_set_element(env, result, 2, value);
  return result;
}

// forward(id, host, port, first?): connects the connection to an IP address, sending `first` ahead.
static napi_value js_forward(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  relay_t *r = call_arguments(env, info, 4, argv);
  double id;
  if (r == NULL || !id_argument(env, argv[0], &id)) return NULL;
  command_t *cmd = new_command(CMD_FORWARD, id);
  char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
  if (!address_argument(env, argv[1], argv[2], &cmd->address, &cmd->address_length, host, sizeof host)) {
    free(cmd);
    return NULL;
  }
  bool is_buffer = false;
  napi_is_buffer(env, argv[3], &is_buffer);
  if (is_buffer) {
    void *data;
    size_t length;
    napi_get_buffer_info(env, argv[3], &data, &length);
    if (length > 0) {
      cmd->bytes = malloc(length);
      if (cmd->bytes == NULL) abort();
      memcpy(cmd->bytes, data, length);
      cmd->length = length;
    }
  }
  enqueue(r, cmd);
  return NULL;
}

static napi_value id_command(napi_env env, napi_callback_info info, uint8_t kind) {
  napi_value argv[1];
  relay_t *r = call_arguments(env, info, 1, argv);
  double id;
  if (r == NULL || !id_argument(env, argv[0], &id)) return NULL;
  enqueue(r, new_command(kind, id));
  return NULL;
}

static napi_value js_peek(napi_env env, napi_callback_info info) { return id_command(env, info, CMD_PEEK); }
static napi_value js_close(napi_env env, napi_callback_info info) { return id_command(env, info, CMD_CLOSE); }
static napi_value js_release(napi_env env, napi_callback_info info) { return id_command(env, info, CMD_RELEASE); }

// closeListener(id): stops accepting on it at once (its port is free to bind again when this returns); its
// connections go on, and its slot serves the next listen.
static napi_value js_close_listener(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  relay_t *r = call_arguments(env, info, 1, argv);
  double id;
  if (r == NULL || !id_argument(env, argv[0], &id)) return NULL;
  uint32_t index = (uint32_t)((uint64_t)id % MAX_LISTENERS);
  // Only the slot's current listener: a stale id must not free its successor's slot.
  if (r->slot_id[index] != id) return NULL;
  // The descriptor is the thread's to close (it may be in accept4 on it); shut, it takes no more connections and
  // frees the port now, and the thread's accept sees EINVAL.
  shutdown(r->slot_fd[index], SHUT_RD);
  r->slot_id[index] = -1;
  r->slot_fd[index] = -1;
  enqueue(r, new_command(CMD_CLOSE_LISTENER, id));
  return NULL;
}

// stop(): the thread stops now (its connections closed). `process.exit()` runs no cleanup hook: without this, the
// thread would go on calling into a Node that is tearing itself down.
static napi_value js_stop(napi_env env, napi_callback_info info) {
  relay_t *r = the_relay(env);
  if (r != NULL) stop_thread(r);
  return NULL;
}

// ref(hold): whether the relay keeps Node's event loop alive.
static napi_value js_ref(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  relay_t *r = call_arguments(env, info, 1, argv);
  bool hold = false;
  if (r == NULL || napi_get_value_bool(env, argv[0], &hold) != napi_ok) return NULL;
  if (hold) napi_ref_threadsafe_function(env, r->tsfn);
  else napi_unref_threadsafe_function(env, r->tsfn);
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor methods[] = {
      {"start", NULL, js_start, NULL, NULL, NULL, napi_default, NULL},
      {"listen", NULL, js_listen, NULL, NULL, NULL, napi_default, NULL},
      {"forward", NULL, js_forward, NULL, NULL, NULL, napi_default, NULL},
      {"peek", NULL, js_peek, NULL, NULL, NULL, napi_default, NULL},
      {"close", NULL, js_close, NULL, NULL, NULL, napi_default, NULL},
      {"release", NULL, js_release, NULL, NULL, NULL, napi_default, NULL},
      {"closeListener", NULL, js_close_listener, NULL, NULL, NULL, napi_default, NULL},
      {"ref", NULL, js_ref, NULL, NULL, NULL, napi_default, NULL},
      {"stop", NULL, js_stop, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof methods / sizeof methods[0], methods);
  return exports;
}
