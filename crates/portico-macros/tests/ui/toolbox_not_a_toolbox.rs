use portico::schema::Implementation;
use portico::server::Server;

struct Calculator;

fn main() {
    let _ = Server::builder(Implementation::new("calc", "1.0.0")).toolbox(Calculator);
}
