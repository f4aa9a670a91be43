// A real Iceberg REST catalog for Icefloe's tests: Apache Iceberg Java's own server-side
// handlers (CatalogHandlers) and serializers (RESTSerializers, through RESTObjectMapper, which is
// why this class sits in org.apache.iceberg.rest) over a HadoopCatalog of a copy of the fixture
// warehouse, behind the JDK's HTTP server on 127.0.0.1. This file only routes (the route table is
// the OpenAPI spec, open-api/rest-catalog-open-api.yaml) and checks credentials; every catalog
// answer comes from Iceberg.
//
// Options (all --name value):
//   --warehouse DIR        the Hadoop-layout warehouse served (required)
//   --port N               0 = any free port; the port is written to --port-file
//   --port-file FILE
//   --warehouse-name NAME  the `warehouse` a client must ask /v1/config for (default: any)
//   --prefix P             returned as the `prefix` override; routes are then /v1/P/...
//   --default K=V          a config default (repeatable)
//   --token T              a static bearer token that never expires
//   --client-id ID --client-secret S   OAuth2 client credentials accepted at /v1/oauth/tokens
//                          and at /oauth2/token (an "external" token endpoint)
//   --scope S              the scope a token request must ask for (default: any)
//   --token-ttl SECONDS    expires_in of issued tokens (default 3600)
//   --token-uses N         an issued token answers 419 after N requests (default: unlimited),
//                          so a client's refresh on expiry is tested without waiting
//   --vend K=V             storage config returned by loadTable to a client that sends
//                          X-Iceberg-Access-Delegation: vended-credentials (repeatable)
//   --vend-prefix P        also return the vended config as a storage-credentials entry for P
//   --fail T=STATUS        loadTable of table T (ns.table) answers STATUS (403, 503, ...)
//   --vend-ttl-ms N        vended credentials expire N ms after each loadTable: the access key
//                          is "expiring-<epoch ms of expiry>" (tests/fault_proxy.py's
//                          --expiring-keys refuses it after that), and
//                          s3.session-token-expires-at-ms says when
//   --metadata-base A=B    loadTable answers metadata-location with prefix A replaced by B
//                          (the warehouse's copy in an object store)
//   --writable true        also answer the write routes (create a namespace, create, commit
//                          and drop a table, commit a multi-table transaction), for the fixture
//                          generators that write through this catalog (tests/gen/other_writers.py)
package org.apache.iceberg.rest;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.rest.credentials.ImmutableCredential;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.OAuthTokenResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;

public final class IcefloeTestCatalogServer {
  /** The routes this server answers, as the config response's `endpoints` lists them. */
  private static final String[] ENDPOINTS = {
    "GET /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
  };

  /** The routes a --writable server answers as well. */
  private static final String[] WRITE_ENDPOINTS = {
    "POST /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/transactions/commit",
  };

  private final HadoopCatalog catalog;
  private final ObjectMapper mapper = RESTObjectMapper.mapper();
  private final Map<String, List<String>> opts;
  private final String prefix;
  private final Map<String, AtomicInteger> issued = new ConcurrentHashMap<>();
  private final int tokenUses;
  private final boolean writable;

  /** A request refused with an HTTP status and an Iceberg error type. */
  private static final class Refused extends RuntimeException {
    final int status;
    final String type;

    Refused(int status, String type, String message) {
      super(message);
      this.status = status;
      this.type = type;
    }
  }

  private IcefloeTestCatalogServer(Map<String, List<String>> opts) {
    this.opts = opts;
    this.prefix = one("prefix", "");
    this.tokenUses = Integer.parseInt(one("token-uses", "-1"));
    this.writable = Boolean.parseBoolean(one("writable", "false"));
    this.catalog = new HadoopCatalog(new Configuration(), one("warehouse", null));
  }

  private String one(String name, String dflt) {
    List<String> v = opts.get(name);
    if (v == null || v.isEmpty()) {
      if (dflt == null) {
        throw new IllegalArgumentException("--" + name + " is required");
      }
      return dflt;
    }
    return v.get(v.size() - 1);
  }

  private Map<String, String> pairs(String name) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String kv : opts.getOrDefault(name, List.of())) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    Map<String, List<String>> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --option value, got " + args[i]);
      }
      opts.computeIfAbsent(args[i].substring(2), k -> new ArrayList<>()).add(args[i + 1]);
    }
    IcefloeTestCatalogServer s = new IcefloeTestCatalogServer(opts);
    int port = Integer.parseInt(s.one("port", "0"));
    HttpServer http =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
    http.createContext("/", s::handle);
    http.setExecutor(Executors.newFixedThreadPool(4));
    http.start();
    String bound = Integer.toString(http.getAddress().getPort());
    String portFile = s.one("port-file", "");
    if (!portFile.isEmpty()) {
      Files.writeString(Paths.get(portFile + ".tmp"), bound + "\n");
      Files.move(Paths.get(portFile + ".tmp"), Paths.get(portFile),
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
    System.err.println("icefloe test REST catalog on 127.0.0.1:" + bound);
  }

  private void handle(HttpExchange ex) throws IOException {
    int status;
    Object body;
    String path = ex.getRequestURI().getRawPath();
    String method = ex.getRequestMethod();
    boolean tokenEndpoint =
        method.equals("POST") && (path.equals("/v1/oauth/tokens") || path.equals("/oauth2/token"));
    try {
      Map<String, String> query = form(ex.getRequestURI().getRawQuery());
      if (tokenEndpoint) {
        body = token(ex);
      } else {
        authorize(ex);
        body = route(method, path, query, ex);
      }
      status = body == null ? 204 : 200;
    } catch (Refused e) {
      status = e.status;
      // The token endpoint answers as OAuth2 does (RFC 6749 section 5.2).
      body = tokenEndpoint
          ? Map.of("error", e.type, "error_description", e.getMessage())
          : error(status, e.type, e.getMessage());
    } catch (NoSuchTableException | NoSuchNamespaceException e) {
      status = 404;
      body = error(status, e.getClass().getSimpleName(), e.getMessage());
    } catch (AlreadyExistsException e) {
      status = 409;
      body = error(status, e.getClass().getSimpleName(), e.getMessage());
    } catch (NotAuthorizedException e) {
      status = 401;
      body = error(status, e.getClass().getSimpleName(), e.getMessage());
    } catch (ForbiddenException e) {
      status = 403;
      body = error(status, e.getClass().getSimpleName(), e.getMessage());
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      status = 400;
      body = error(status, "BadRequestException", String.valueOf(e.getMessage()));
    } catch (RuntimeException e) {
      status = 500;
      body = error(status, e.getClass().getSimpleName(), String.valueOf(e.getMessage()));
    }
    byte[] bytes = body == null ? new byte[0] : mapper.writeValueAsBytes(body);
    if (!ex.getRequestMethod().equals("HEAD")) {
      ex.getResponseHeaders().set("Content-Type", "application/json");
    }
    boolean noBody = body == null || ex.getRequestMethod().equals("HEAD");
    ex.sendResponseHeaders(status, noBody ? -1 : bytes.length);
    if (!noBody) {
      try (OutputStream out = ex.getResponseBody()) {
        out.write(bytes);
      }
    }
    ex.close();
  }

  private static ErrorResponse error(int status, String type, String message) {
    return ErrorResponse.builder().responseCode(status).withType(type).withMessage(message).build();
  }

  /** POST /v1/oauth/tokens: the OAuth2 client credentials grant (RFC 6749 section 4.4). */
  private OAuthTokenResponse token(HttpExchange ex) throws IOException {
    Map<String, String> f = form(new String(readAll(ex.getRequestBody()), StandardCharsets.UTF_8));
    String id = f.get("client_id");
    String secret = f.get("client_secret");
    String basic = ex.getRequestHeaders().getFirst("Authorization");
    if (basic != null && basic.startsWith("Basic ")) {
      String pair = new String(Base64.getDecoder().decode(basic.substring(6)), StandardCharsets.UTF_8);
      int colon = pair.indexOf(':');
      id = URLDecoder.decode(pair.substring(0, colon), StandardCharsets.UTF_8);
      secret = URLDecoder.decode(pair.substring(colon + 1), StandardCharsets.UTF_8);
    }
    if (!"client_credentials".equals(f.get("grant_type"))) {
      throw new Refused(400, "unsupported_grant_type", "grant_type must be client_credentials");
    }
    if (!opts.containsKey("client-id") || !one("client-id", "").equals(id)
        || !one("client-secret", "").equals(secret)) {
      throw new Refused(401, "invalid_client", "unknown client or wrong secret");
    }
    String scope = f.getOrDefault("scope", "");
    String wanted = one("scope", "");
    if (!wanted.isEmpty() && !List.of(scope.split(" ")).contains(wanted)) {
      throw new Refused(400, "invalid_scope", "scope must include " + wanted + ", got " + scope);
    }
    String token = "issued-" + UUID.randomUUID();
    issued.put(token, new AtomicInteger(0));
    OAuthTokenResponse.Builder b = OAuthTokenResponse.builder()
        .withToken(token)
        .withTokenType("bearer")
        .withIssuedTokenType("urn:ietf:params:oauth:token-type:access_token")
        .setExpirationInSeconds(Integer.parseInt(one("token-ttl", "3600")));
    if (!scope.isEmpty()) {
      b.addScopes(List.of(scope.split(" ")));
    }
    return b.build();
  }

  /** Checks the bearer token: unknown or missing → 401, expired (used up) → 419. */
  private void authorize(HttpExchange ex) {
    if (!opts.containsKey("token") && !opts.containsKey("client-id")) {
      return;
    }
    String h = ex.getRequestHeaders().getFirst("Authorization");
    if (h == null || !h.startsWith("Bearer ")) {
      throw new Refused(401, "NotAuthorizedException", "missing bearer token");
    }
    String t = h.substring(7);
    if (opts.containsKey("token") && one("token", "").equals(t)) {
      return;
    }
    AtomicInteger uses = issued.get(t);
    if (uses == null) {
      throw new Refused(401, "NotAuthorizedException", "unknown bearer token");
    }
    if (tokenUses >= 0 && uses.incrementAndGet() > tokenUses) {
      throw new Refused(419, "AuthenticationTimeoutException", "bearer token expired");
    }
  }

  private Object route(String method, String path, Map<String, String> q, HttpExchange ex) {
    if (path.equals("/v1/config") && method.equals("GET")) {
      return config(q);
    }
    String base = prefix.isEmpty() ? "/v1/" : "/v1/" + prefix + "/";
    if (!path.startsWith(base)) {
      throw new Refused(404, "NoSuchPathException", "no route " + method + " " + path);
    }
    String[] p = path.substring(base.length()).split("/", -1);
    if (writable) {
      Object written = write(method, p, ex);
      if (written != NOT_WRITTEN) {
        return written;
      }
    }
    if (p.length == 1 && p[0].equals("namespaces") && method.equals("GET")) {
      Namespace parent = q.containsKey("parent") ? namespace(q.get("parent")) : Namespace.empty();
      return q.containsKey("pageSize")
          ? CatalogHandlers.listNamespaces(catalog, parent, q.get("pageToken"), q.get("pageSize"))
          : CatalogHandlers.listNamespaces(catalog, parent);
    }
    if (p.length >= 2 && p[0].equals("namespaces")) {
      Namespace ns = namespace(decode(p[1]));
      if (p.length == 2 && method.equals("GET")) {
        return CatalogHandlers.loadNamespace(catalog, ns);
      }
      if (p.length == 2 && method.equals("HEAD")) {
        CatalogHandlers.namespaceExists(catalog, ns);
        return null;
      }
      if (p.length == 3 && p[2].equals("tables") && method.equals("GET")) {
        return q.containsKey("pageSize")
            ? CatalogHandlers.listTables(catalog, ns, q.get("pageToken"), q.get("pageSize"))
            : CatalogHandlers.listTables(catalog, ns);
      }
      if (p.length == 4 && p[2].equals("tables")) {
        TableIdentifier id = TableIdentifier.of(ns, decode(p[3]));
        if (method.equals("HEAD")) {
          CatalogHandlers.tableExists(catalog, id);
          return null;
        }
        if (method.equals("GET")) {
          return loadTable(id, ex);
        }
      }
    }
    throw new Refused(404, "NoSuchPathException", "no route " + method + " " + path);
  }

  /** What {@link #write} returns for a request that is no write route. */
  private static final Object NOT_WRITTEN = new Object();

  /**
   * The write routes of a --writable server; every change is made by Iceberg's handlers over
   * the HadoopCatalog. A multi-table transaction commits table by table (not atomically: the
   * generators that use it write one table at a time).
   */
  private Object write(String method, String[] p, HttpExchange ex) {
    try {
      if (p.length == 2 && p[0].equals("transactions") && p[1].equals("commit")
          && method.equals("POST")) {
        ObjectNode body = (ObjectNode) mapper.readTree(ex.getRequestBody());
        for (JsonNode change :
            body.path("table-changes")) {
          UpdateTableRequest req = mapper.treeToValue(change, UpdateTableRequest.class);
          CatalogHandlers.updateTable(catalog, req.identifier(), req);
        }
        return null;
      }
      if (p.length == 1 && p[0].equals("namespaces") && method.equals("POST")) {
        return CatalogHandlers.createNamespace(catalog,
            mapper.readValue(ex.getRequestBody(), CreateNamespaceRequest.class));
      }
      if (p.length >= 3 && p[0].equals("namespaces") && p[2].equals("tables")) {
        Namespace ns = namespace(decode(p[1]));
        if (p.length == 3 && method.equals("POST")) {
          CreateTableRequest req = mapper.readValue(ex.getRequestBody(), CreateTableRequest.class);
          return req.stageCreate()
              ? CatalogHandlers.stageTableCreate(catalog, ns, req)
              : CatalogHandlers.createTable(catalog, ns, req);
        }
        if (p.length == 4 && method.equals("POST")) {
          TableIdentifier id = TableIdentifier.of(ns, decode(p[3]));
          return CatalogHandlers.updateTable(catalog, id,
              mapper.readValue(ex.getRequestBody(), UpdateTableRequest.class));
        }
        if (p.length == 4 && method.equals("DELETE")) {
          CatalogHandlers.dropTable(catalog, TableIdentifier.of(ns, decode(p[3])));
          return null;
        }
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the request body: " + e.getMessage(), e);
    }
    return NOT_WRITTEN;
  }

  /** GET /v1/config: defaults, and the prefix as an override, for a known warehouse. */
  private Object config(Map<String, String> q) {
    String wanted = one("warehouse-name", "");
    if (!wanted.isEmpty() && !wanted.equals(q.get("warehouse"))) {
      throw new Refused(404, "NoSuchWarehouseException",
          "no warehouse " + q.get("warehouse") + " (this catalog serves " + wanted + ")");
    }
    ConfigResponse.Builder b = ConfigResponse.builder().withDefaults(pairs("default"));
    if (!prefix.isEmpty()) {
      b.withOverride("prefix", prefix);
    }
    // Endpoint needs httpcore5, which the runtime jar lacks: the list is written by hand.
    ObjectNode node = mapper.valueToTree(b.build());
    ArrayNode endpoints = node.putArray("endpoints");
    for (String e : ENDPOINTS) {
      endpoints.add(e);
    }
    if (writable) {
      for (String e : WRITE_ENDPOINTS) {
        endpoints.add(e);
      }
    }
    return node;
  }

  private Object loadTable(TableIdentifier id, HttpExchange ex) {
    String fail = pairs("fail").get(id.toString());
    if (fail != null) {
      int status = Integer.parseInt(fail);
      throw new Refused(status, status == 403 ? "ForbiddenException" : "ServiceFailureException",
          "refused by the test server for " + id);
    }
    LoadTableResponse plain = CatalogHandlers.loadTable(catalog, id);
    String delegation = ex.getRequestHeaders().getFirst("X-Iceberg-Access-Delegation");
    LoadTableResponse answer = plain;
    if (delegation != null && delegation.contains("vended-credentials")) {
      Map<String, String> vend = pairs("vend");
      String ttl = one("vend-ttl-ms", "");
      if (!ttl.isEmpty()) {
        long expires = System.currentTimeMillis() + Long.parseLong(ttl);
        vend.put("s3.access-key-id", "expiring-" + expires);
        vend.put("s3.session-token-expires-at-ms", Long.toString(expires));
      }
      LoadTableResponse.Builder b = LoadTableResponse.builder()
          .withTableMetadata(plain.tableMetadata())
          .addAllConfig(plain.config())
          .addAllConfig(vend);
      for (String p : opts.getOrDefault("vend-prefix", List.of())) {
        b.addCredential(ImmutableCredential.builder().prefix(p).config(vend).build());
      }
      answer = b.build();
    }
    ObjectNode node = mapper.valueToTree(answer);
    for (Map.Entry<String, String> base : pairs("metadata-base").entrySet()) {
      String loc = node.path("metadata-location").asText("");
      for (String from : List.of("file:" + base.getKey(), base.getKey())) {
        if (loc.startsWith(from)) {
          node.put("metadata-location", base.getValue() + loc.substring(from.length()));
          break;
        }
      }
    }
    return node;
  }

  /** A namespace as the spec writes it in paths and `parent`: levels joined by 0x1F. */
  private static Namespace namespace(String decoded) {
    return Namespace.of(decoded.split("\u001f", -1));
  }

  private static String decode(String s) {
    return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static Map<String, String> form(String raw) {
    Map<String, String> out = new HashMap<>();
    if (raw == null || raw.isEmpty()) {
      return out;
    }
    for (String kv : raw.split("&")) {
      int eq = kv.indexOf('=');
      String k = eq < 0 ? kv : kv.substring(0, eq);
      String v = eq < 0 ? "" : kv.substring(eq + 1);
      out.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
    }
    return out;
  }

  private static byte[] readAll(InputStream in) throws IOException {
    return in.readAllBytes();
  }
}
