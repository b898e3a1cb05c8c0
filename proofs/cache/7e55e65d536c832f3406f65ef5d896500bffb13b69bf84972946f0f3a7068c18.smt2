(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E1_ () (_ BitVec 16))
(declare-fun E2_ () (_ BitVec 16))
(declare-fun GA_ () Bool)
(declare-fun GAp_ () Bool)
(declare-fun GP_ () (_ BitVec 15))
(declare-fun GPp_ () (_ BitVec 15))
(declare-fun GZ_ () Bool)
(declare-fun GZp_ () Bool)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GP_ (_ bv4096 15)))
(assert
 (bvsgt GP_ (_ bv28672 15)))
(assert
 (let (($x50 (= GP_ (_ bv0 15))))
 (=> GZ_ $x50)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GPp_ (_ bv4096 15)))
(assert
 (bvsgt GPp_ (_ bv28672 15)))
(assert
 (let (($x62 (= GPp_ (_ bv0 15))))
 (=> GZp_ $x62)))
(assert
 (let (($x66 (bvsle GP_ GPp_)))
 (and $x66 (=> (and GZ_ (not GZp_)) (and (distinct GPp_ (_ bv0 15)) true)) (=> (and GZp_ (not GZ_)) (and (distinct GP_ (_ bv0 15)) true)))))
(assert
 (let (($x84 (bvsle E1_ (_ bv254 16))))
 (and (bvsge E1_ (_ bv65397 16)) $x84)))
(assert
 (let (($x89 (bvsle E2_ (_ bv254 16))))
 (and (bvsge E2_ (_ bv65397 16)) $x89)))
(assert
 (let ((?x101 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x102 ((_ sign_extend 3) ?x101)))
 (bvsle (ite (or (or GZp_ false) false) (_ bv65397 16) ?x102) E2_))))
(assert
 (bvslt E2_ E1_))
(assert
 (let ((?x101 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x102 ((_ sign_extend 3) ?x101)))
 (= (ite (or (or GZ_ false) false) (_ bv65397 16) ?x102) E1_))))
(assert
 (let ((?x192 ((_ zero_extend 436) (bvsub E1_ E2_))))
(let ((?x101 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
(let ((?x102 ((_ sign_extend 3) ?x101)))
(let ((?x179 (bvsub E1_ ?x102)))
(let ((?x183 ((_ zero_extend 35) (bvadd (ite (bvsgt (_ bv0 16) ?x179) (_ bv0 16) ?x179) (_ bv0 16)))))
(let ((?x146 ((_ zero_extend 17) (ite true (_ bv1 1) (_ bv0 1)))))
(let ((?x147 (bvmul ?x146 ?x146)))
(let ((?x177 ((_ zero_extend 33) (bvmul ((_ zero_extend 3) (ite (bvslt GP_ (_ bv0 15)) (bvneg GP_) GP_)) ?x147))))
(let ((?x187 ((_ zero_extend 5) (bvlshr (bvshl ?x177 (_ bv33 51)) (ite (bvugt ?x183 (_ bv51 51)) (_ bv51 51) ?x183)))))
(let (($x169 (ite (= (_ bv0 15) GP_) GA_ (bvsgt (_ bv0 15) GP_))))
(let (($x170 (ite false true $x169)))
(let ((?x193 (bvshl ((_ sign_extend 396) (ite (ite false false $x170) (bvsub (_ bv0 56) ?x187) ?x187)) ?x192)))
(let ((?x156 (bvadd (ite (bvsgt (_ bv0 16) (bvsub E2_ ?x102)) (_ bv0 16) (bvsub E2_ ?x102)) (_ bv0 16))))
(let ((?x157 ((_ zero_extend 35) ?x156)))
(let ((?x148 (bvmul ((_ zero_extend 3) (ite (bvslt GPp_ (_ bv0 15)) (bvneg GPp_) GPp_)) ?x147)))
(let ((?x161 (bvlshr (bvshl ((_ zero_extend 33) ?x148) (_ bv33 51)) (ite (bvugt ?x157 (_ bv51 51)) (_ bv51 51) ?x157))))
(let ((?x162 ((_ zero_extend 5) ?x161)))
(let (($x136 (ite (= (_ bv0 15) GPp_) GAp_ (bvsgt (_ bv0 15) GPp_))))
(let (($x137 (ite false true $x136)))
(let ((?x194 (bvsub ((_ sign_extend 396) (ite (ite false false $x137) (bvsub (_ bv0 56) ?x162) ?x162)) ?x193)))
(not (bvsge ?x194 (bvshl (_ bv4 452) ?x192))))))))))))))))))))))))
(check-sat)
