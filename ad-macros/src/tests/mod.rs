mod program_gen;
mod random_programs;
