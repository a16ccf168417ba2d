struct Calculator;

#[portico::tools]
impl Default for Calculator {
    fn default() -> Self {
        Calculator
    }
}

fn main() {}
