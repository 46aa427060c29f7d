package pilar.testservers;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilders;
import org.neo4j.io.ByteUnit;

import inet.ipaddr.IPAddressString;

/**
 * Test-only launcher: starts a real Neo4j 5.26 server in-process (neo4j-harness).
 *
 * <ul>
 *   <li>Bolt only, bound to 127.0.0.1; port = first argument, else env NEO4J_PORT, else 7687
 *       (0 = pick a free port; the printed URI carries the real one).</li>
 *   <li>Authentication disabled: drivers connect with {@code auth=None} (any basic-auth
 *       credentials are accepted as well).</li>
 *   <li>HTTP/HTTPS connectors disabled.</li>
 *   <li>Data in a fresh temporary folder (env NEO4J_DATA_DIR to choose its parent),
 *       deleted on shutdown.</li>
 *   <li>Page cache from env NEO4J_PAGECACHE_MB (default 128).</li>
 *   <li>{@code LOAD CSV} closed as in docker-compose.yml: file URLs refused
 *       ({@code dbms.security.allow_csv_import_from_file_urls=false}), the import folder an
 *       empty one inside the data folder ({@code server.directories.import}), and every
 *       address refused for URL loading ({@code internal.dbms.cypher_ip_blocklist}, so an
 *       {@code http://} URL is never fetched).</li>
 * </ul>
 *
 * When ready, prints exactly two lines to stdout: the bolt URI ({@code bolt://127.0.0.1:7687})
 * and the server version ({@code neo4j 5.26.x}); then blocks until killed. SIGTERM / SIGINT run
 * a shutdown hook that closes the database cleanly.
 */
public final class Neo4jLauncher {

    private Neo4jLauncher() {}

    public static void main(String[] args) throws Exception {
        int port = parsePort(args.length > 0 ? args[0] : System.getenv("NEO4J_PORT"));
        long pageCacheMb = parseLong(System.getenv("NEO4J_PAGECACHE_MB"), 128);

        String parent = System.getenv("NEO4J_DATA_DIR");
        Path base = (parent == null || parent.isBlank())
                ? Files.createTempDirectory("pilar-neo4j-")
                : Files.createTempDirectory(Files.createDirectories(Paths.get(parent)), "pilar-neo4j-");

        Path imports = Files.createDirectories(base.resolve("import-empty"));
        SocketAddress bolt = new SocketAddress("127.0.0.1", port);
        Neo4j neo4j = Neo4jBuilders.newInProcessBuilder(base)
                .withDisabledServer()
                .withConfig(HttpConnector.enabled, false)
                .withConfig(HttpsConnector.enabled, false)
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, bolt)
                .withConfig(BoltConnector.advertised_address, bolt)
                .withConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .withConfig(GraphDatabaseSettings.auth_enabled, false)
                .withConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMb))
                .withConfig(GraphDatabaseSettings.allow_file_urls, false)
                .withConfig(GraphDatabaseSettings.load_csv_file_url_root, imports)
                .withConfig(GraphDatabaseInternalSettings.cypher_ip_blocklist,
                            List.of(new IPAddressString("0.0.0.0/0"), new IPAddressString("::/0")))
                // Netty's default graceful-shutdown quiet period makes close() take ~12 s.
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(3))
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("neo4j-launcher: shutting down");
            try {
                neo4j.close();
            } catch (Throwable t) {
                t.printStackTrace();
            }
            deleteQuietly(base);
            System.err.println("neo4j-launcher: stopped");
            stopped.countDown();
        }, "neo4j-launcher-shutdown"));

        String version = neo4j.defaultDatabaseService().executeTransactionally(
                "CALL dbms.components() YIELD name, versions RETURN versions[0] AS v",
                Map.of(),
                r -> String.valueOf(r.next().get("v")));

        String uri = "bolt://127.0.0.1:" + neo4j.boltURI().getPort();
        System.out.println(uri);
        System.out.println("neo4j " + version);
        System.out.flush();

        stopped.await();
    }

    private static int parsePort(String value) {
        if (value == null || value.isBlank()) {
            return 7687;
        }
        int port = Integer.parseInt(value.trim());
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("bad port: " + value);
        }
        return port;
    }

    private static long parseLong(String value, long dflt) {
        return (value == null || value.isBlank()) ? dflt : Long.parseLong(value.trim());
    }

    private static void deleteQuietly(Path root) {
        try {
            if (!Files.exists(root)) {
                return;
            }
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            System.err.println("neo4j-launcher: could not delete " + root + ": " + e);
        }
    }
}
