//! Numeric integration tests of `#[differentiate(forward, reverse)]`.
//!
//! Every differentiated function below is written the way a numerical Rust programmer
//! writes it, and all three generated functions are checked:
//! - `_grad` against central finite differences (`phidiff::check::gradient`) and, where
//!   they exist, published or hand-derived values;
//! - `_fwd` against finite-difference directional derivatives;
//! - `_fwd` against `_rev` with the dot-product identity (`phidiff::check::dot_product`).
//!
//! Tolerances are `common::TOLS` (FD: rel 1e-6, abs 1e-8; dot product: rel 1e-12) unless a
//! case states a looser one and why. The harness is in `tests/common/mod.rs`.
//!
//! # Two modes
//!
//! Every file under `numeric/` is compiled twice, once per mode, and imports the attribute
//! with `use super::differentiate`, so the copies differ only in what that names:
//! - `coarse`: `phidiff::differentiate`, the default (coarsening on);
//! - `fine`: `phidiff::__private::differentiate_coarsen_off`, the same attribute with
//!   `coarsen = off` (one derivative step per operation).
//!
//! The test functions in the files are plain `pub fn`s. [`numeric_tests!`] makes one
//! `#[test]` per listed function, `numeric::FILE::NAME`, which calls
//! `common::in_both_modes`: the coarse copy runs, then the fine copy, on the same thread,
//! each checked against finite differences, the dot-product identity and the published
//! values as above; then the values, tangents, adjoints and gradients their checks recorded
//! must agree to `common::CROSS_REL` (1e-10, abs floor `common::CROSS_ABS` 1e-12). Tests
//! that call neither `check_grad` nor `check_fwd_rev` (Hessian-vector products, tie
//! conventions, shadow accumulation, the two expected panics) record nothing: each mode is
//! already held to exact or hand-derived values at 1e-12 or tighter.
//!
//! Both modes run inside one test function so that no comparison depends on scheduling:
//! two separately scheduled tests meeting in a shared registry would compare nothing
//! under a test filter that selects one mode, under a process-per-test runner (nextest),
//! or for a result recorded by one mode only; here a missing or extra result is itself a
//! failure. The price is the list below: a test function that is not listed is never
//! called, which `deny(dead_code)` turns into a compile error.

mod common;

/// Compiles the listed files in both modes and makes one both-modes `#[test]` per listed
/// function; `#[should_panic(expected = "…")]` before a name asks for that panic in each
/// mode instead.
macro_rules! numeric_tests {
    ($(
        $(#[doc = $file_doc:literal])*
        $file:ident: [$(
            $(#[should_panic(expected = $expected:literal)])?
            $test:ident
        ),* $(,)?]
    ),* $(,)?) => {
        /// The files with `#[differentiate]` (coarsening on, the default).
        #[path = "numeric"]
        #[deny(dead_code)] // an unlisted test function would never run
        mod coarse {
            pub use phidiff::differentiate;
            $( $(#[doc = $file_doc])* pub mod $file; )*
        }

        /// The files with `#[differentiate(.., coarsen = off)]`.
        #[path = "numeric"]
        #[deny(dead_code)]
        mod fine {
            pub use phidiff::__private::differentiate_coarsen_off as differentiate;
            $( $(#[doc = $file_doc])* pub mod $file; )*
        }

        mod numeric {
            $(
                $(#[doc = $file_doc])*
                mod $file {
                    $(
                        #[test]
                        fn $test() {
                            crate::common::in_both_modes(
                                numeric_tests!(@expect $($expected)?),
                                crate::coarse::$file::$test,
                                crate::fine::$file::$test,
                            );
                        }
                    )*
                }
            )*
        }
    };
    (@expect) => { crate::common::Expect::Pass };
    (@expect $expected:literal) => { crate::common::Expect::Panic($expected) };
}

numeric_tests! {
    /// Slices and buffers: zip, enumerate, rev, 2-D indexing, in/out and output slices.
    arrays: [
        dot_gradient_is_the_other_vector,
        horner_matches_power_basis,
        weighted_squares_enumerate,
        matvec_flat_writes_output,
        #[should_panic(expected = "assertion failed")]
        matvec_flat_assert_is_kept,
        half_norm_sq_nested_rows,
        scale_add_sin_accumulates,
        normalize_in_place,
        discounted_suffix_reversed_range,
        smoothed_cubes_buffers,
        is_empty_both_ways,
        kinks_away_from_kinks,
        tie_conventions,
    ],
    /// Long straight-line code: derivative blocks cut into chunks so that rustc's debug
    /// info does not overflow its stack.
    long_code: [unrolled_integrator, unrolled_integrator_in_a_loop],
    /// Batched reverse mode (`reverse(width = N)`): every lane against `_fwd` and
    /// against the scalar `_rev`.
    batched: [
        looped_lanes,
        smoothed_passes_lanes,
        weighted_row_maxima_lanes,
        cube_roots_lanes,
        rows_energy_lanes,
        normalize_in_place_lanes,
        calls_a_helper_lanes,
        #[should_panic(expected = "`dx[1]`")]
        short_shadow_in_a_lane_panics,
        looped_forward_lanes,
        smoothed_passes_forward_lanes,
        weighted_row_maxima_forward_lanes,
        cube_roots_forward_lanes,
        rows_energy_forward_lanes,
        normalize_in_place_forward_lanes,
        #[should_panic(expected = "`dx[1]`")]
        short_tangent_in_a_lane_panics,
    ],
    /// Hand-written `_fwd`/`_rev` rules called from differentiated functions.
    calls: [
        softplus_layer_uses_custom_rules,
        spring_chain_uses_custom_slice_rule,
        mut_param_passed_by_name,
        data_through_an_opaque_channel,
        configuration_is_not_a_channel,
    ],
    /// Rosenbrock, Himmelblau, Beale, Wood, Speelpenning (published values).
    classic: [
        rosenbrock_published_n2,
        rosenbrock_published_n4,
        rosenbrock_strips,
        rosenbrock_longer_vector,
        rosenbrock_rev_adds_into_shadow,
        #[should_panic(expected = "`x`")]
        rosenbrock_rev_rejects_short_shadow,
        himmelblau_published,
        beale_published,
        wood_published,
        speelpenning_published,
        speelpenning_with_a_zero_factor,
    ],
    /// Checkpointed loops (revolve, periodic, online; memory and disk): heat equation,
    /// Lorenz-63, Burgers (published values).
    checkpoint: [
        heat_published_every_scheme,
        heat_against_finite_differences,
        lorenz_published_every_scheme,
        lorenz_against_finite_differences,
        burgers_published_every_scheme,
        burgers_against_finite_differences,
    ],
    /// Checkpointed loops that decide their own trip count or state: a `while` with a
    /// data-dependent trip count, a `&mut` state evolved in place.
    checkpoint_loops: [
        while_loop_every_scheme,
        while_loop_against_finite_differences,
        in_place_state_restored_after_rev,
    ],
    /// Checkpointed `for` loops over reversed, strided ranges that break early.
    checkpoint_ranges: [reversed_strided_range_with_break],
    /// Checkpointed steps reversed from their restored states, and bodies that re-read
    /// what they overwrote (taped steps): equal to the un-checkpointed gradient.
    checkpoint_steps: [
        swap_step_every_scheme,
        copy_back_every_scheme,
        in_place_every_scheme,
        call_step_every_scheme,
        call_then_read_every_scheme,
        scalar_while_every_scheme,
        scalar_and_buffer_every_scheme,
    ],
    /// The user's rayon loops (`par_iter_mut`, `into_par_iter`, `.map(..).sum()`, `.zip`)
    /// against the same computations as serial loops.
    parallel: [
        heat_step_parallel_equals_serial,
        map_sum_and_zip_parallel_equal_serial,
        gather_at_random_indices,
        histogram_scatter,
        burgers_step_parallel_equals_serial,
        checkpointed_parallel_stencil,
        nested_recurrence_in_parallel_loop,
        gmm_parallel_over_points,
        atomic_and_summation_aware_adjoints_equal_serial,
    ],
    /// Rayon loops and sums inside serial `for`/`while` loops and checkpointed steps.
    parallel_nested: [
        squares_swapped_is_u_to_the_fourth,
        energy_scaled_is_x_to_the_ninth,
        ring_steps_match_serial,
        substeps_checkpointed_match_serial,
        damped_while_matches_serial,
    ],
    /// Random compositions of rayon loops with loops, branches, checkpointed loops and
    /// calls (generated by `ad-macros`' random-program tests), against serial twins.
    compositions: [compositions_match_serial_twins],
    /// Generic (`T: Float`) rayon loops reading at computed indices, with `f64` and
    /// `Dual<f64>`.
    parallel_generic: [generic_ring_gather_with_duals, generic_gathered_steps_with_duals],
    /// A parallel sum over what a parallel loop just wrote, moved into that loop.
    parallel_fused: [writer_then_sum_with_gather, whole_rows_then_sum],
    /// Rayon loops over the rows of a flat 2-D grid (`par_chunks_mut`).
    parallel_rows: [
        heat2d_rows_parallel_equal_serial,
        burgers2d_rows_parallel_equal_serial,
        packed_rows_par_matches_finite_differences,
        rows_reading_neighbour_rows_match_serial,
    ],
    /// Branches, data-dependent loops, `match`, `loop`/`break`/`continue`, early `return`.
    control_flow: [
        babylonian_sqrt_published,
        running_max_weighted_matches_hand_gradient,
        sorted_top_k_matches_hand_gradient,
        sum_until_limit_early_and_late_exit,
        cube_root_newton_matches_analytic,
        first_crossing_interpolates,
        positive_part_energy_break_and_continue,
        piecewise_each_branch,
        mode_energy_every_arm,
        guarded_mode_energy_every_arm,
        strided_pairs_step_by,
        geometric_series_matches_closed_form,
        shadowed_bindings,
    ],
    /// Derivative paths the others do not reach (filled buffers, per-step scratch buffers,
    /// `iter_mut`, methods on opaque receivers, branches in `while`, triangular loops).
    coverage: [
        filled_buffer_adjoint_sums_the_shadow,
        scratch_buffer_allocated_in_a_loop,
        iter_mut_updates_in_place,
        method_on_opaque_receiver_uses_its_rules,
        branch_inside_data_dependent_while,
        triangular_nested_loops,
        two_dimensional_local_buffers,
    ],
    /// Sums whose adjoint is the seed, reversed iteration by iteration in the forward
    /// sweep, and look-alikes that are not.
    fused: [
        negated_sum_with_outer_scalar,
        inner_recurrence_sum_tapes_per_iteration,
        read_then_overwritten_buffer,
        branch_values_read_from_the_iteration,
        adjacent_inner_loops_fused,
        look_alike_sums,
        mixture_like_scratch_rows,
        carried_row_is_not_fused,
        chain_energy_shifted_adds,
        fused_parallel_sums_equal_serial,
    ],
    /// Hessian-vector products by forward-over-reverse with `Dual<f64>`.
    hessian: [
        rosenbrock_hessian_columns_at_published_point,
        rosenbrock_hessian_vector_products,
        himmelblau_hessian_vector_products,
        log_sum_exp_hessian_vector_products,
    ],
    /// Recurrences closed by coarsening: linear (C7/C8: a moving average, compound
    /// interest with a product, discounted returns inside an outer loop) and repeated
    /// nonlinear maps (C5: Newton steps, the logistic map).
    recurrences: [
        moving_average_matches_finite_differences,
        compound_balance_matches_finite_differences,
        discounted_returns_matches_finite_differences,
        newton_steps_match_finite_differences,
        logistic_map_matches_finite_differences,
    ],
    /// Values rebuilt instead of taped: a scratch row filled by an earlier loop (ADBench
    /// GMM's triangular forms), stores read back, counters stepped by an invariant, values
    /// the same in every iteration (saved once); and two near-fills that must not be reused.
    reuse: [
        triangular_forms_match_finite_differences,
        counted_indices_match_finite_differences,
        countdown_bands_match_finite_differences,
        repeated_triangles_match_finite_differences,
        fixed_weights_match_finite_differences,
        checkpointed_triangles_match_finite_differences,
        partial_refill_matches_finite_differences,
        overwritten_fill_matches_finite_differences,
        fill_from_outside_matches_finite_differences,
    ],
    /// Issue 46's corpus: optimization test functions as crates write them, against
    /// num-dual.
    idiomatic_optimization: [
        generic_test_functions_against_num_dual,
        array_parameters_against_num_dual,
    ],
    /// Issue 46's corpus: statistics, ODEs, physics, geometry, f32 kernels.
    idiomatic_science: [statistics_against_num_dual, losses_and_series, ode_and_physics, f32_kernels],
    /// Issue 46's corpus: the rest of the iterator vocabulary, sub-slices and closures.
    idiomatic_forms: [
        generic_forms_against_num_dual,
        reductions_and_predicates,
        collected_and_sliced,
        rows_as_slices,
        arrays_mapped,
        pushed_vectors,
        rows_of_matrices,
        vectors_grown_by_runs,
        three_dimensional,
        destructuring_assignments,
    ],
    /// Issue 46: views of two dimensions (planes of 3-D buffers, ranges of rows), rows of
    /// 3-D buffers passed to calls, `.flatten()` of rows.
    idiomatic_views: [
        planes_and_row_ranges,
        rows_of_planes_in_calls,
        flattened_rows,
        views_in_rayon_closures,
        nested_pushes_after_lets,
        views_in_checkpointed_loops,
    ],
    /// Issue 47: structs deriving `Differentiable` as parameters (by reference, `&mut`, by
    /// value), generic, from another module, in checkpointed loops.
    idiomatic_structs: [
        struct_by_reference_generic,
        struct_by_mut_reference_checkpointed,
        struct_by_value,
        shadow_length_named_by_field,
        slices_of_structs,
        methods_and_calls_with_structs,
        tuples,
        rayon_over_slices_of_structs,
        struct_patterns,
        structs_passed_on,
        struct_locals,
        owned_slices_and_borrowed_tuples,
    ],
    /// Issue 47: models as the ADBench programs are written in Rust — slices of structs
    /// zipped, a struct in a batched reverse sweep, `sin_cos`, tuples chosen by branches.
    idiomatic_models: [
        zipped_slices_of_structs,
        batched_rows_of_a_struct,
        tuples_chosen_by_branches,
        batched_mut_struct,
        trait_impls,
        struct_results,
    ],
    /// Issue 47: structs inside structs, and `Vec`s of structs inside structs.
    idiomatic_nested: [
        nested_model,
        nested_mut_state_checkpointed,
        nested_in_rayon_closures,
        nested_by_value_and_in_slices,
    ],
    /// Issue 47: several results (tuples, structs) taken apart by the caller.
    idiomatic_results: [
        tuple_results_taken_apart,
        generic_results_taken_apart,
        struct_results_taken_apart,
        results_in_loops,
    ],
    /// Issue 48: helpers without attributes, differentiated where they are called.
    idiomatic_helpers: [
        helper_chains,
        generic_helpers,
        helpers_in_loops,
        custom_rules_beat_inlining,
        helpers_across_modules,
        helpers_with_results_and_returns,
        methods_without_attributes,
        custom_solve_in_a_helper_chain,
        structs_to_helpers,
        methods_on_fields_and_locals,
    ],
    /// Issue 48: helpers on `Copy` structs passed and returned by value, and on `&f64`.
    idiomatic_values: [
        vectors_by_value,
        states_by_value,
        values_in_branches_and_rayon,
        scalar_references_to_helpers,
        mutable_scalar_references_to_helpers,
        mutable_scalar_references_in_checkpoints_and_rayon,
    ],
    /// Issue 48: helpers brought in by `use` (by name, renamed, re-exported, by a glob),
    /// with their derivatives called where they are defined.
    imported_helpers: [imported_helpers],
    /// Issue 46: functions mixing `f32` and `f64`.
    idiomatic_floats: [
        f32_data_f64_arithmetic,
        f32_parameters_of_f64_functions,
        mixed_pipeline,
        mixed_checkpointed,
    ],
    /// Issue 46, fallible code: `Option`/`Result` results, `?`, `.ok_or(..)?`, `Err` arms,
    /// `if let`/`while let`/`let .. else` on optional elements; failure paths untouched.
    idiomatic_fallible: [
        optional_statistics,
        results_and_errors,
        optional_elements,
        fallible_calls,
        guarded_reads_in_loops,
    ],
    /// Issue 45's review: explicit lifetimes, swapped rows, a buffer passed twice, renamed
    /// derivatives, rebound buffers, float predicates, a `num_traits::Float` bound.
    review: [
        explicit_lifetimes,
        swapped_rows_of_2d_buffers,
        #[should_panic(expected = "`a.swap(..)` exchanges rows of different lengths")]
        swapping_rows_of_different_lengths_panics,
        a_buffer_passed_twice,
        names_bindings_predicates_and_bounds,
        #[should_panic(
            expected = "`#[checkpoint(revolve(snapshots = snapshots))]`: checkpoint scheme `revolve`: `snapshots` must be at least 1, got 0"
        )]
        zero_snapshots_names_the_attribute,
    ],
    /// Loops that branch on an interval of their index, split in three by the reverse
    /// sweep: a 1-D stencil's boundary, inclusive bounds with an integer parameter.
    split: [
        boundary_rows_match_finite_differences,
        inclusive_window_matches_finite_differences,
    ],
    /// Lorenz-63 with RK4, an explicit heat equation, Lennard-Jones pairs.
    simulation: [
        lorenz_rhs_in_out,
        lorenz_rk4_published,
        lorenz_rk4_longer_horizons,
        heat_explicit_gradient,
        heat_explicit_odd_and_even_step_counts,
        lennard_jones_gradient_and_invariants,
    ],
    /// log-sum-exp, softmax, variance, logistic regression, a Gaussian mixture.
    statistics: [
        log_sum_exp_gradient_is_softmax,
        smooth_max_sq_diff_through_a_call,
        softmax_jacobian,
        odd_extremes_reach_the_winning_elements,
        row_peaks_reach_the_winning_elements,
        sample_variance_gradient,
        logistic_loss_gradient,
        gmm_log_likelihood_gradient,
    ],
    /// Affine accesses sliced once before their loop (index windows): bases below zero,
    /// loop-carried counters, ranges above zero or empty, written buffers, overruns.
    windows: [
        rows_with_a_base_below_zero,
        triangular_counter_and_empty_ranges,
        offsets_and_written_buffers,
        counters_stepped_by_an_i32_loop,
        in_range_reads_pass,
        #[should_panic(expected = "out of")]
        reverse_panics_on_an_overrun,
        #[should_panic(expected = "out of")]
        forward_panics_on_an_overrun,
    ],
}

/// The cross-check itself can fail: two bodies whose gradients differ far below the
/// finite-difference tolerance but above `CROSS_REL` pass their own checks and are told
/// apart, and so are two bodies that run different checks, or of which only one panics
/// where both should.
mod cross_check {
    use crate::common::*;

    fn square_plus_linear(x: &[f64]) -> f64 {
        x[0] * x[0] + 3.0 * x[1]
    }

    fn grad_check(relative_error: f64) {
        let grad = |x: &[f64]| {
            let g0 = 2.0 * x[0] * (1.0 + relative_error);
            (square_plus_linear(x), vec![g0, 3.0])
        };
        check_grad(
            "square_plus_linear",
            &[0.7, -0.2],
            &square_plus_linear,
            &grad,
            TOLS,
        );
    }

    fn exact() {
        grad_check(0.0);
    }

    fn off_by_1e_8() {
        grad_check(1e-8);
    }

    fn twice() {
        grad_check(0.0);
        grad_check(0.0);
    }

    fn panics() {
        panic!("boom");
    }

    #[test]
    fn agreeing_modes_pass() {
        in_both_modes(Expect::Pass, exact, exact);
    }

    #[test]
    #[should_panic(
        expected = "case `square_plus_linear`, _grad gradient[0] is 1.4e0 in coarse mode"
    )]
    fn a_small_difference_fails() {
        in_both_modes(Expect::Pass, exact, off_by_1e_8);
    }

    #[test]
    #[should_panic(expected = "recorded 2 results but fine mode (`coarsen = off`) recorded 4")]
    fn a_missing_result_fails() {
        in_both_modes(Expect::Pass, exact, twice);
    }

    #[test]
    #[should_panic(
        expected = "in fine mode (`coarsen = off`), expected a panic containing \"boom\""
    )]
    fn an_expected_panic_in_one_mode_only_fails() {
        in_both_modes(Expect::Panic("boom"), panics, exact);
    }
}
