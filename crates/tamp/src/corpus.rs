//! A seeded, reproducible, database-like text file to compress: tab-separated rows of an id, a
//! timestamp, a name, a city, a status, an amount, a currency and a short note, like a table
//! dump. The same seed and size give the same bytes on every machine (a fixed PRNG, no floats, no
//! locale). The mix is tuned so LZ4 and zstd -1 shrink it about as much as the database files the
//! original Tamp was shown on ("a little over 60%"); measured figures are in docs/benchmarks.md.

use std::io::{self, Write};

use measure::rng::SplitMix64;

/// The seed used when none is given.
pub const DEFAULT_SEED: u64 = 4;

const FIRST: &[&str] = &[
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Charles",
    "Karen",
    "Christopher",
    "Lisa",
    "Daniel",
    "Nancy",
    "Matthew",
    "Betty",
    "Anthony",
    "Margaret",
    "Mark",
    "Sandra",
    "Donald",
    "Ashley",
    "Steven",
    "Kimberly",
    "Paul",
    "Emily",
    "Andrew",
    "Donna",
    "Joshua",
    "Michelle",
    "Kenneth",
    "Carol",
    "Kevin",
    "Amanda",
    "Brian",
    "Dorothy",
    "George",
    "Melissa",
    "Timothy",
    "Deborah",
    "Ronald",
    "Stephanie",
    "Edward",
    "Rebecca",
    "Jason",
    "Sharon",
    "Jeffrey",
    "Laura",
    "Ryan",
    "Cynthia",
    "Jacob",
    "Kathleen",
    "Gary",
    "Amy",
    "Nicholas",
    "Angela",
    "Eric",
    "Shirley",
    "Jonathan",
    "Anna",
    "Stephen",
    "Brenda",
    "Larry",
    "Pamela",
    "Justin",
    "Emma",
    "Scott",
    "Nicole",
    "Brandon",
    "Helen",
    "Benjamin",
    "Samantha",
    "Samuel",
    "Katherine",
    "Gregory",
    "Christine",
    "Alexander",
    "Debra",
    "Frank",
    "Rachel",
    "Raymond",
    "Carolyn",
    "Patrick",
    "Janet",
    "Jack",
    "Catherine",
    "Dennis",
    "Maria",
    "Jerry",
    "Heather",
    "Tyler",
    "Diane",
    "Aaron",
    "Ruth",
    "Jose",
    "Julie",
    "Adam",
    "Olivia",
    "Nathan",
    "Joyce",
    "Henry",
    "Virginia",
    "Douglas",
    "Victoria",
    "Zachary",
    "Kelly",
    "Peter",
    "Lauren",
    "Kyle",
    "Christina",
    "Ethan",
    "Joan",
    "Walter",
    "Evelyn",
    "Noah",
    "Judith",
    "Jeremy",
    "Megan",
];

const LAST: &[&str] = &[
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Gonzalez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Taylor",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Perez",
    "Thompson",
    "White",
    "Harris",
    "Sanchez",
    "Clark",
    "Ramirez",
    "Lewis",
    "Robinson",
    "Walker",
    "Young",
    "Allen",
    "King",
    "Wright",
    "Scott",
    "Torres",
    "Nguyen",
    "Hill",
    "Flores",
    "Green",
    "Adams",
    "Nelson",
    "Baker",
    "Hall",
    "Rivera",
    "Campbell",
    "Mitchell",
    "Carter",
    "Roberts",
    "Gomez",
    "Phillips",
    "Evans",
    "Turner",
    "Diaz",
    "Parker",
    "Cruz",
    "Edwards",
    "Collins",
    "Reyes",
    "Stewart",
    "Morris",
    "Morales",
    "Murphy",
    "Cook",
    "Rogers",
    "Gutierrez",
    "Ortiz",
    "Morgan",
    "Cooper",
    "Peterson",
    "Bailey",
    "Reed",
    "Kelly",
    "Howard",
    "Ramos",
    "Kim",
    "Cox",
    "Ward",
    "Richardson",
    "Watson",
    "Brooks",
    "Chavez",
    "Wood",
    "James",
    "Bennett",
    "Gray",
    "Mendoza",
    "Ruiz",
    "Hughes",
    "Price",
    "Alvarez",
    "Castillo",
    "Sanders",
    "Patel",
    "Myers",
    "Long",
    "Ross",
    "Foster",
    "Jimenez",
    "Powell",
    "Jenkins",
    "Perry",
    "Russell",
    "Sullivan",
    "Bell",
    "Coleman",
    "Butler",
    "Henderson",
    "Barnes",
    "Gonzales",
    "Fisher",
    "Vasquez",
    "Simmons",
    "Romero",
    "Jordan",
    "Patterson",
    "Alexander",
    "Hamilton",
    "Graham",
];

const CITY: &[&str] = &[
    "London",
    "Paris",
    "Berlin",
    "Madrid",
    "Rome",
    "Vienna",
    "Warsaw",
    "Prague",
    "Lisbon",
    "Dublin",
    "Amsterdam",
    "Brussels",
    "Stockholm",
    "Oslo",
    "Helsinki",
    "Copenhagen",
    "Zurich",
    "Munich",
    "Hamburg",
    "Milan",
    "Barcelona",
    "Lyon",
    "Porto",
    "Krakow",
    "Budapest",
    "Athens",
    "Istanbul",
    "New York",
    "Chicago",
    "Boston",
    "Seattle",
    "Denver",
    "Austin",
    "Atlanta",
    "Toronto",
    "Montreal",
    "Vancouver",
    "Mexico City",
    "Sao Paulo",
    "Buenos Aires",
    "Lima",
    "Bogota",
    "Santiago",
    "Tokyo",
    "Osaka",
    "Seoul",
    "Beijing",
    "Shanghai",
    "Singapore",
    "Mumbai",
    "Delhi",
    "Bangalore",
    "Sydney",
    "Melbourne",
    "Auckland",
    "Cape Town",
    "Nairobi",
    "Lagos",
    "Cairo",
    "Dubai",
    "Tel Aviv",
    "Manila",
    "Jakarta",
    "Bangkok",
];

const STATUS: &[&str] = &[
    "active",
    "active",
    "active",
    "pending",
    "shipped",
    "delivered",
    "cancelled",
    "refunded",
    "on_hold",
];

const CURRENCY: &[&str] = &["EUR", "USD", "GBP", "EUR", "USD", "JPY", "CHF"];

const NOTE: &[&str] = &[
    "customer requested express delivery",
    "address verified by phone",
    "gift wrap",
    "leave at the front desk",
    "second attempt",
    "priority account",
    "invoice sent by email",
    "payment by bank transfer",
    "partial refund issued",
    "call before delivery",
    "fragile",
    "backorder",
    "loyalty discount applied",
    "signature required",
    "duplicate order merged",
    "awaiting stock",
];

/// The corpus's draws from the workspace's one generator (`measure::rng::SplitMix64`, fully
/// specified, so the corpus never changes with a crate update). `below` is a plain modulo: its
/// bias is irrelevant here, and changing it would change every corpus.
#[derive(Debug, Clone)]
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, integers only).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Appends an 8-character reference code (letters and digits, like a booking reference).
fn token(rng: &mut Rng, row: &mut Vec<u8>) {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = rng.next();
    for _ in 0..8 {
        row.push(ALNUM[(x % 62) as usize]);
        x /= 62;
    }
}

/// Appends one row to `row`.
fn row(rng: &mut Rng, id: u64, t: &mut i64, row: &mut Vec<u8>) -> io::Result<()> {
    *t += rng.below(40) as i64; // rows arrive a few seconds apart, like an order table
    let (y, mo, d) = civil(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    let cents = rng.below(500_000) + 99;
    write!(
        row,
        "{id}\t{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}\t{}\t{} {}\t{}\t{}\t{}.{:02}\t{}\t",
        s / 3600,
        s / 60 % 60,
        s % 60,
        rng.below(1_000_000),
        rng.pick(FIRST),
        rng.pick(LAST),
        rng.pick(CITY),
        rng.pick(STATUS),
        cents / 100,
        cents % 100,
        rng.pick(CURRENCY),
    )?;
    match rng.below(4) {
        0 => {}
        1 => {
            row.extend_from_slice(b"ref ");
            token(rng, row);
        }
        2 => {
            write!(row, "{}; ref ", rng.pick(NOTE))?;
            token(rng, row);
        }
        _ => write!(row, "order {} {}", rng.below(10_000_000), rng.pick(NOTE))?,
    }
    row.push(b'\n');
    Ok(())
}

/// Writes exactly `size` bytes of the corpus for `seed` to `out` (the last row is cut at `size`).
pub fn write(seed: u64, size: u64, out: &mut impl Write) -> io::Result<()> {
    let mut rng = Rng(SplitMix64::new(seed));
    let mut t: i64 = 1_700_000_000 + (rng.below(86_400 * 365)) as i64;
    let mut buf = Vec::with_capacity(1 << 16);
    let mut left = size;
    let mut id = 1 + rng.below(1000);
    while left > 0 {
        buf.clear();
        while buf.len() < (1 << 16) - 256 {
            row(&mut rng, id, &mut t, &mut buf)?;
            id += 1;
        }
        let n = (buf.len() as u64).min(left) as usize;
        out.write_all(&buf[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// The corpus in memory.
pub fn generate(seed: u64, size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(size);
    // Writing to a Vec cannot fail.
    let _ = write(seed, size as u64, &mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_675), (2023, 11, 14));
        assert_eq!(civil(-1), (1969, 12, 31));
    }

    #[test]
    fn exact_size_and_rows() {
        let v = generate(1, 100_000);
        assert_eq!(v.len(), 100_000);
        let first = v.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let cols = first.split(|&b| b == b'\t').count();
        assert_eq!(cols, 9, "{}", String::from_utf8_lossy(first));
    }
}
